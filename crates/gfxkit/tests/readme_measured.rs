//! Every figure of the README's "Measured" table comes from a named script or test.
//!
//! Each row of the table names its sources in backticks in its last cell ("made by"): a
//! script (`scripts/...`, `bench/...`) or a test file (`crates/<crate>/tests/*.rs`). A script
//! records its figures in `docs/measured/<script name>.txt` (see `scripts/record.sh`;
//! `bench/floor.sh` writes `docs/performance.md`), so this test reads only files in the
//! repository: every number in a row (integers with thousands separators, decimals, ratios such
//! as `0.48x`) must appear in the recording of one of the row's sources (its `#` lines, the
//! date, commit and load, aside), or, for a test file, in that file's source. Version numbers
//! (`LLVM 22`, `ROCm 7.2.2`), numbers inside names (`gfx90a`, `llc-19`, `V5`) and code spans are
//! not figures. Rerun the scripts (their headers say how) when a figure changes, then copy the
//! new figures into the README.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One number as written: its digits without separators, and whether it is a ratio (`x`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Figure {
    digits: String,
    ratio: bool,
}

/// Words after which a number is a version, not a figure.
const VERSION_WORDS: [&str; 3] = ["LLVM ", "ROCm ", "CCOB v"];

/// The numbers of `text` with their byte ranges in it. A number starts after a character that
/// cannot be part of a name (so `gfx1030`, `x86_64`, `V5`, `12.5` in `GFX12.5`, `19` in `llc-19`
/// and `7-0` in `rocm-7-0` are skipped, while the second figure of a range `2-160` counts), has
/// separators `,` or `_` between digits and at most one decimal point, and may end in `x` (a
/// ratio); one followed by any other letter is part of a name too.
fn numbers(text: &str) -> Vec<(std::ops::Range<usize>, Figure)> {
    let b = text.as_bytes();
    let mut out: Vec<(std::ops::Range<usize>, Figure)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        let prev = if start > 0 { b[start - 1] } else { b' ' };
        // After a '-', a number is the end of a range only when a figure ends there.
        let range_end = prev == b'-' && out.last().is_some_and(|(r, _)| r.end + 1 == start);
        let in_name = prev.is_ascii_alphanumeric()
            || matches!(prev, b'_' | b'.' | b'/' | b'+' | b':' | b'=' | b'@')
            || (prev == b'-' && !range_end);
        let mut digits = String::new();
        let mut point = false;
        while i < b.len() {
            let c = b[i];
            let next_digit = b.get(i + 1).is_some_and(u8::is_ascii_digit);
            if c.is_ascii_digit() {
                digits.push(char::from(c));
            } else if matches!(c, b',' | b'_') && next_digit {
            } else if c == b'.' && next_digit && !point {
                point = true;
                digits.push('.');
            } else {
                break;
            }
            i += 1;
        }
        let after = |k: usize| b.get(i + k).copied().unwrap_or(b' ');
        let mut ratio = false;
        let mut end = i;
        let mut name_follows = after(0).is_ascii_alphabetic() || after(0) == b'_';
        if after(0) == b'x' && !after(1).is_ascii_alphanumeric() {
            ratio = true;
            name_follows = false;
            end += 1;
        }
        let version = VERSION_WORDS.iter().any(|w| text[..start].ends_with(w));
        if !in_name && !name_follows && !version {
            out.push((start..end, Figure { digits, ratio }));
        }
        // Skip the rest of a name or a version (`7.2.2`, `0x52f`).
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.' || b[i] == b'_') {
            i += 1;
        }
    }
    out
}

/// The row's text without code spans and link targets: where its figures are. Every byte keeps
/// its offset (a blanked character becomes as many spaces as it has bytes).
fn prose(row: &str) -> String {
    let mut s = String::new();
    let mut code = false;
    for c in row.chars() {
        if c == '`' {
            code = !code;
            s.push(' ');
        } else {
            if code {
                s.push_str(&" ".repeat(c.len_utf8()));
            } else {
                s.push(c);
            }
        }
    }
    // `[text](target)`: the target is not prose.
    while let Some(at) = s.find("](") {
        let end = s[at..].find(')').map_or(s.len(), |e| at + e + 1);
        s.replace_range(at + 1..end, &" ".repeat(end - at - 1));
    }
    s
}

/// The sources a row names in its last cell ("made by"): code spans that are paths under
/// scripts/, bench/ or crates/. (The other cells may mention scripts that are not sources.)
fn sources(row: &str) -> Vec<String> {
    let last = row
        .trim()
        .trim_end_matches('|')
        .rsplit('|')
        .next()
        .unwrap_or("");
    last.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            ["scripts/", "bench/", "crates/"]
                .iter()
                .any(|p| s.starts_with(p))
        })
        .filter(|s| !s.contains(' '))
        .map(str::to_owned)
        .collect()
}

/// Where a source's figures are: its recording, or for a test file the file itself.
fn recording(source: &str) -> PathBuf {
    if source == "bench/floor.sh" {
        return PathBuf::from("docs/performance.md");
    }
    if source.starts_with("crates/") {
        return PathBuf::from(source);
    }
    let name = Path::new(source)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(source);
    let stem = name.strip_suffix(".sh").unwrap_or(name);
    PathBuf::from(format!("docs/measured/{stem}.txt"))
}

/// The rows of the README's "## Measured" table (without the header and its rule).
fn measured_rows(readme: &str) -> Vec<String> {
    let section = readme
        .split("\n## ")
        .find(|s| s.starts_with("Measured\n"))
        .unwrap_or("");
    section
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(2)
        .map(str::to_owned)
        .collect()
}

/// Every disagreement between the README's Measured table and the recordings; `read` gives a
/// repository file's text (None when it does not exist).
fn problems(readme: &str, read: &dyn Fn(&Path) -> Option<String>) -> Vec<String> {
    let rows = measured_rows(readme);
    let mut out = Vec::new();
    if rows.is_empty() {
        out.push("README.md: no \"## Measured\" table".to_owned());
    }
    for row in &rows {
        let what = row.split('|').nth(1).unwrap_or("").trim();
        let srcs = sources(row);
        if srcs.is_empty() {
            out.push(format!("row `{what}`: names no script or test"));
        }
        let mut known = BTreeSet::new();
        for src in &srcs {
            let script = read(Path::new(src));
            if script.is_none() {
                out.push(format!("row `{what}`: {src} does not exist"));
                continue;
            }
            let rec = recording(src);
            let Some(text) = read(&rec) else {
                out.push(format!(
                    "row `{what}`: {src} has no recording {}",
                    rec.display()
                ));
                continue;
            };
            let provenance = if src.starts_with("crates/") {
                true
            } else if src == "bench/floor.sh" {
                text.contains("bench/floor.sh")
            } else {
                text.lines()
                    .next()
                    .is_some_and(|l| l.starts_with(&format!("# written by {src} ")))
            };
            if !provenance {
                out.push(format!(
                    "row `{what}`: {} does not say it was written by {src}",
                    rec.display()
                ));
            }
            // A recording's `#` lines (date, commit, load) are not figures.
            let figures: String = if rec.starts_with("docs/measured") {
                text.lines()
                    .filter(|l| !l.starts_with('#'))
                    .collect::<Vec<_>>()
                    .join("\n")
            } else {
                text
            };
            known.extend(numbers(&figures).into_iter().map(|(_, f)| f));
        }
        for (_, f) in numbers(&prose(row)) {
            let found = known.contains(&f)
                || (!f.ratio
                    && known.contains(&Figure {
                        digits: f.digits.clone(),
                        ratio: true,
                    }));
            if !found {
                out.push(format!(
                    "row `{what}`: {}{} is in no recording of {}",
                    f.digits,
                    if f.ratio { "x" } else { "" },
                    srcs.join(", ")
                ));
            }
        }
    }
    out
}

fn read_repo(path: &Path) -> Option<String> {
    std::fs::read_to_string(repo().join(path)).ok()
}

fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).expect("README.md")
}

#[test]
fn every_measured_figure_is_in_a_recording_of_its_rows_sources() {
    let p = problems(&readme(), &read_repo);
    assert!(p.is_empty(), "README.md, \"Measured\":\n{}", p.join("\n"));
}

/// The check is not vacuous: each figure of the table, edited, is reported.
#[test]
fn each_figure_edited_is_reported() {
    let text = readme();
    let start = text.find("\n## Measured\n").expect("a Measured section");
    let end = text[start + 1..]
        .find("\n## ")
        .map_or(text.len(), |e| start + 1 + e);
    let mut edited = 0;
    let mut offset = start;
    for row in text[start..end].lines() {
        let row_at = offset;
        offset += row.len() + 1;
        if !row.starts_with('|') || row.starts_with("|---") || row.starts_with("| what ") {
            continue;
        }
        for (range, f) in numbers(&prose(row)) {
            // Digits that no recording holds after the figure's own.
            let mut t = text.clone();
            let at = row_at + range.end - usize::from(f.ratio);
            t.insert_str(at, "0987");
            let p = problems(&t, &read_repo);
            assert!(
                p.iter().any(|m| m.contains("0987")),
                "editing {} in `{row}` went unnoticed",
                f.digits
            );
            edited += 1;
        }
    }
    assert!(edited > 20, "only {edited} figures in the table");
}

#[test]
fn numbers_are_figures_not_names_or_versions() {
    let got: Vec<String> = numbers(
        "gfx90a llc-19 cupy-rocm-7-0 LLVM 22 ROCm 7.2.2 V5 GFX12.5 x86_64 1,310,496,488 -> 0.48x, 2-160, \
         16.8 MiB, 90% 113_935 0x52f 3 libraries 2.6x",
    )
    .into_iter()
    .map(|(_, f)| format!("{}{}", f.digits, if f.ratio { "x" } else { "" }))
    .collect();
    assert_eq!(
        got,
        [
            "1310496488",
            "0.48x",
            "2",
            "160",
            "16.8",
            "90",
            "113935",
            "3",
            "2.6x"
        ]
    );
    assert_eq!(
        sources(
            "| a (`scripts/kd-sweep`) | b | `scripts/x` (`--keep gfx90a`), `crates/x/tests/y.rs` |"
        ),
        ["scripts/x", "crates/x/tests/y.rs"]
    );
    assert_eq!(
        recording("bench/packages.sh"),
        Path::new("docs/measured/packages.txt")
    );
}

/// The memory-model counts are made from committed files alone: the recording must be what
/// `scripts/memmodel-count` prints now, so that rewritten expectations cannot leave the README's
/// figures behind.
#[test]
fn memmodel_count_recording_is_current() {
    let out = std::process::Command::new("bash")
        .arg(repo().join("scripts/memmodel-count"))
        .env("GFXKIT_RECORD", "0")
        .output()
        .expect("bash scripts/memmodel-count");
    assert!(
        out.status.success(),
        "scripts/memmodel-count: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let now = String::from_utf8(out.stdout).expect("UTF-8");
    let recorded = read_repo(Path::new("docs/measured/memmodel-count.txt"))
        .expect("docs/measured/memmodel-count.txt");
    let recorded: Vec<&str> = recorded.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        now.lines().collect::<Vec<_>>(),
        recorded,
        "docs/measured/memmodel-count.txt is stale: rerun scripts/memmodel-count"
    );
}
