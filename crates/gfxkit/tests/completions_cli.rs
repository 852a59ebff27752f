//! `gfxkit completions` and `gfxkit manpage`: the bash script loads in bash and completes
//! subcommands and options, every shell gets a script naming the subcommands, the manual page
//! renders with `man -l` (installed by `scripts/ensure-shell-tools`) and documents every
//! subcommand, `--dir` writes one page per command; and `--version` names the commit.

use std::path::Path;
use std::process::{Command, Output};

fn gfxkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .output()
        .expect("gfxkit runs")
}

fn stdout_ok(args: &[&str]) -> String {
    let out = gfxkit(args);
    assert!(
        out.status.success(),
        "gfxkit {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The subcommands `gfxkit --help` lists.
fn subcommands() -> Vec<String> {
    let help = stdout_ok(&["--help"]);
    let start = help.find("Commands:").expect("a Commands: section");
    help[start..]
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_loads_the_script_and_completes() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("gfxkit.bash");
    std::fs::write(&script, stdout_ok(&["completions", "bash"])).unwrap();
    let run = |snippet: &str| {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!("source '{}' && {snippet}", script.display()))
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "bash: {snippet}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let spec = run("complete -p gfxkit");
    assert!(
        spec.contains("-F _gfxkit") && spec.trim_end().ends_with("gfxkit"),
        "{spec}"
    );
    // What bash offers after `gfxkit li` and after `gfxkit check --req`.
    let words = run(
        "COMP_WORDS=(gfxkit li); COMP_CWORD=1; COMP_LINE='gfxkit li'; COMP_POINT=9; \
         _gfxkit gfxkit li gfxkit; printf '%s\\n' \"${COMPREPLY[@]}\"",
    );
    assert_eq!(words.split_whitespace().collect::<Vec<_>>(), ["list"]);
    let words = run(
        "COMP_WORDS=(gfxkit check --req); COMP_CWORD=2; COMP_LINE='gfxkit check --req'; \
         COMP_POINT=18; _gfxkit gfxkit --req check; printf '%s\\n' \"${COMPREPLY[@]}\"",
    );
    assert_eq!(words.split_whitespace().collect::<Vec<_>>(), ["--require"]);
}

#[test]
fn every_shell_gets_a_script_naming_every_subcommand() {
    let subs = subcommands();
    assert!(
        subs.len() >= 20 && subs.iter().any(|s| s == "manpage"),
        "{subs:?}"
    );
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let script = stdout_ok(&["completions", shell]);
        for s in &subs {
            assert!(script.contains(s.as_str()), "{shell} completions lack {s}");
        }
    }
    let bad = gfxkit(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid value 'tcsh'"));
}

fn man_render(page: &Path) -> String {
    let out = Command::new("man")
        .args(["-l", "-Tutf8"])
        .arg(page)
        .env("MANWIDTH", "100")
        .env("MAN_KEEP_FORMATTING", "0")
        .output()
        .expect("man is missing: run `bash scripts/ensure-shell-tools` (installs man-db)");
    assert!(
        out.status.success(),
        "man -l {}: {}",
        page.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    // Bold and underline as overstrikes, removed.
    let text = String::from_utf8_lossy(&out.stdout);
    let mut plain = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if chars.peek() == Some(&'\u{8}') {
            chars.next();
            continue;
        }
        plain.push(c);
    }
    plain
}

#[test]
fn man_renders_the_page_with_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("gfxkit.1");
    std::fs::write(&page, stdout_ok(&["manpage"])).unwrap();
    let text = man_render(&page);
    assert!(text.contains("gfxkit - Inspect, bundle, prune and explain AMD GPU device code"));
    for s in subcommands() {
        assert!(
            text.contains(&format!("GFXKIT {}", s.to_uppercase())),
            "the page has no section for {s}"
        );
    }
    // Options of a subcommand and of a nested one, with their help.
    assert!(text.contains("--require <ID[,ID...]>"), "check's --require");
    assert!(text.contains("GFXKIT KPACK SPLIT") && text.contains("--kpack-dir <DIR>"));

    let pages = dir.path().join("man1");
    stdout_ok(&["manpage", "--dir", pages.to_str().unwrap()]);
    let mut names: Vec<String> = std::fs::read_dir(&pages)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    for s in subcommands() {
        assert!(names.contains(&format!("gfxkit-{s}.1")), "{names:?}");
    }
    assert!(
        names.contains(&"gfxkit-kpack-split.1".to_owned()),
        "{names:?}"
    );
    let list = man_render(&pages.join("gfxkit-list.1"));
    assert!(
        list.contains("gfxkit-list - List the offload bundles"),
        "{list}"
    );
}

#[test]
fn version_names_the_commit_built_from() {
    let v = stdout_ok(&["--version"]);
    let expected = match std::env::var("GFXKIT_BUILD_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_owned(),
        _ => {
            let head = Command::new("git")
                .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "HEAD"])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8(o.stdout).unwrap().trim()[..12].to_owned());
            match head {
                Some(h) => h,
                None => {
                    assert!(v.contains("built outside a git checkout"), "{v}");
                    return;
                }
            }
        }
    };
    assert_eq!(
        v.trim(),
        format!("gfxkit {} (commit {expected})", env!("CARGO_PKG_VERSION"))
    );
}
