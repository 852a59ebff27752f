//! The option syntax of `clang-offload-bundler` (LLVM `cl` style), parsed by hand so that
//! `gfxkit offload-bundler` and a `clang-offload-bundler` link accept exactly what clang's tool
//! accepts: `-opt=value`, `--opt=value`, `-opt value` for options taking a value,
//! `-flag`, `-flag=true|false|1|0`, comma-separated lists for `-targets`, `-inputs` and
//! `-outputs`, repeated `-input=`/`-output=`, and the last occurrence wins for single options.

use std::ffi::OsString;

/// What the command line asked for, before the mode checks of the tool.
#[derive(Debug, Default, Clone)]
pub struct Options {
    /// `-type`.
    pub files_type: Option<String>,
    /// `-input` values (one file each).
    pub input: Vec<String>,
    /// `-inputs` values (comma lists, deprecated).
    pub inputs_deprecated: Vec<String>,
    /// `-input` occurrences.
    pub input_count: usize,
    /// `-inputs` occurrences.
    pub inputs_count: usize,
    /// `-output` values.
    pub output: Vec<String>,
    /// `-outputs` values.
    pub outputs_deprecated: Vec<String>,
    /// `-output` occurrences.
    pub output_count: usize,
    /// `-outputs` occurrences.
    pub outputs_count: usize,
    /// `-targets` values after splitting the comma lists.
    pub targets: Vec<String>,
    /// `-targets` occurrences.
    pub targets_count: usize,
    /// `-unbundle`.
    pub unbundle: bool,
    /// `-list`.
    pub list: bool,
    /// `-###`.
    pub print_external_commands: bool,
    /// `-allow-missing-bundles`.
    pub allow_missing_bundles: bool,
    /// `-bundle-align` (default 1).
    pub bundle_align: u32,
    /// `-check-input-archive`.
    pub check_input_archive: bool,
    /// `-hip-openmp-compatible`.
    pub hip_openmp_compatible: bool,
    /// `-compress` when given.
    pub compress: Option<bool>,
    /// `-compression-level` when given.
    pub compression_level: Option<i32>,
    /// `-verbose` when given.
    pub verbose: Option<bool>,
    /// `-help`, `-h`, `-help-hidden`, `-help-list`, `-help-list-hidden`.
    pub help: bool,
    /// `-version`.
    pub version: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A boolean flag: `-x`, `-x=true`.
    Flag,
    /// Takes a value: `-x=v` or `-x v`.
    Value,
}

/// Every option the tool knows, as LLVM spells them (without dashes).
const OPTIONS: &[(&str, Kind)] = &[
    ("type", Kind::Value),
    ("input", Kind::Value),
    ("inputs", Kind::Value),
    ("output", Kind::Value),
    ("outputs", Kind::Value),
    ("targets", Kind::Value),
    ("unbundle", Kind::Flag),
    ("list", Kind::Flag),
    ("###", Kind::Flag),
    ("allow-missing-bundles", Kind::Flag),
    ("bundle-align", Kind::Value),
    ("check-input-archive", Kind::Flag),
    ("hip-openmp-compatible", Kind::Flag),
    ("compress", Kind::Flag),
    ("compression-level", Kind::Value),
    ("verbose", Kind::Flag),
    ("help", Kind::Flag),
    ("h", Kind::Flag),
    ("help-hidden", Kind::Flag),
    ("help-list", Kind::Flag),
    ("help-list-hidden", Kind::Flag),
    ("version", Kind::Flag),
    ("print-options", Kind::Flag),
    ("print-all-options", Kind::Flag),
];

/// Parses `args` (without the program name). On failure returns the messages LLVM's option
/// parser would print, each without the `<program>: ` prefix.
pub fn parse(args: &[OsString]) -> Result<Options, Vec<String>> {
    let args = expand_response_files(args, 0);
    let args = &args[..];
    let mut o = Options {
        bundle_align: 1,
        ..Options::default()
    };
    let mut errors = Vec::new();
    let mut i = 0;
    let mut only_positional = false;
    while i < args.len() {
        let raw = args[i].to_string_lossy().into_owned();
        i += 1;
        if only_positional || !raw.starts_with('-') || raw == "-" {
            errors.push(format!(
                "Unknown command line argument '{raw}'.  Try: '{{prog}} --help'"
            ));
            continue;
        }
        if raw == "--" {
            only_positional = true;
            continue;
        }
        let body = raw
            .strip_prefix("--")
            .or_else(|| raw.strip_prefix('-'))
            .unwrap_or(&raw);
        let (name, inline_value) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (body, None),
        };
        let Some(&(name, kind)) = OPTIONS.iter().find(|(n, _)| *n == name) else {
            errors.push(format!(
                "Unknown command line argument '{raw}'.  Try: '{{prog}} --help'"
            ));
            if let Some(near) = nearest_option(name) {
                let shown = match &inline_value {
                    Some(v) => format!("--{near}={v}"),
                    None => format!("--{near}"),
                };
                errors.push(format!("Did you mean '{shown}'?"));
            }
            continue;
        };
        let value = match kind {
            Kind::Flag => match inline_value.as_deref() {
                None | Some("true") | Some("TRUE") | Some("True") | Some("1") => Some(true),
                Some("false") | Some("FALSE") | Some("False") | Some("0") => Some(false),
                Some(v) => {
                    errors.push(format!(
                        "for the --{name} option: '{v}' is invalid value for boolean argument! Try 0 or 1"
                    ));
                    continue;
                }
            }
            .map(|b| b.to_string()),
            Kind::Value => match inline_value {
                Some(v) => Some(v),
                None if i < args.len() => {
                    let v = args[i].to_string_lossy().into_owned();
                    i += 1;
                    Some(v)
                }
                None => {
                    errors.push(format!("for the --{name} option: requires a value!"));
                    continue;
                }
            },
        };
        let value = value.unwrap_or_default();
        let flag = value == "true";
        match name {
            "type" => o.files_type = Some(value),
            "input" => {
                o.input.push(value);
                o.input_count += 1;
            }
            "inputs" => {
                o.inputs_deprecated.extend(split_commas(&value));
                o.inputs_count += 1;
            }
            "output" => {
                o.output.push(value);
                o.output_count += 1;
            }
            "outputs" => {
                o.outputs_deprecated.extend(split_commas(&value));
                o.outputs_count += 1;
            }
            "targets" => {
                o.targets.extend(split_commas(&value));
                o.targets_count += 1;
            }
            "unbundle" => o.unbundle = flag,
            "list" => o.list = flag,
            "###" => o.print_external_commands = flag,
            "allow-missing-bundles" => o.allow_missing_bundles = flag,
            "check-input-archive" => o.check_input_archive = flag,
            "hip-openmp-compatible" => o.hip_openmp_compatible = flag,
            "compress" => o.compress = Some(flag),
            "verbose" => o.verbose = Some(flag),
            "help" | "h" | "help-hidden" | "help-list" | "help-list-hidden" => o.help = flag,
            "version" => o.version = flag,
            "print-options" | "print-all-options" => {}
            "bundle-align" => match parse_llvm_uint(&value) {
                Some(v) => o.bundle_align = v,
                None => errors.push(format!(
                    "for the --bundle-align option: '{value}' value invalid for uint argument!"
                )),
            },
            "compression-level" => match parse_llvm_int(&value) {
                Some(v) => o.compression_level = Some(v),
                None => errors.push(format!(
                    "for the --compression-level option: '{value}' value invalid for integer argument!"
                )),
            },
            _ => unreachable!("every option in OPTIONS is handled"),
        }
    }
    if o.help || o.version {
        return Ok(o);
    }
    if o.files_type.is_none() {
        errors.push("for the --type option: must be specified at least once!".to_owned());
    }
    if errors.is_empty() {
        Ok(o)
    } else {
        Err(errors)
    }
}

/// Replaces each `@file` argument by the arguments in `file`, split like a GNU shell line
/// (whitespace, quotes, backslash escapes), as LLVM's option parser does. An unreadable file
/// leaves the argument as it is; nesting stops at 20 levels.
pub fn expand_response_files(args: &[OsString], depth: usize) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len());
    for a in args {
        let text = a.to_string_lossy();
        match text.strip_prefix('@') {
            Some(path) if depth < 20 => match std::fs::read_to_string(path) {
                Ok(body) => {
                    let inner: Vec<OsString> = tokenize_gnu(&body)
                        .into_iter()
                        .map(OsString::from)
                        .collect();
                    out.extend(expand_response_files(&inner, depth + 1));
                }
                Err(_) => out.push(a.clone()),
            },
            _ => out.push(a.clone()),
        }
    }
    out
}

/// GNU-style splitting of a response file.
fn tokenize_gnu(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_token = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
                in_token = true;
            }
            '\'' | '"' => {
                in_token = true;
                for n in chars.by_ref() {
                    if n == c {
                        break;
                    }
                    cur.push(n);
                }
            }
            c if c.is_whitespace() => {
                if in_token {
                    out.push(std::mem::take(&mut cur));
                    in_token = false;
                }
            }
            c => {
                cur.push(c);
                in_token = true;
            }
        }
    }
    if in_token {
        out.push(cur);
    }
    out
}

/// LLVM's comma-separated list: every comma separates, empty items are kept.
fn split_commas(value: &str) -> impl Iterator<Item = String> + '_ {
    value.split(',').map(str::to_owned)
}

/// An unsigned 32-bit number in LLVM's `getAsInteger(0, ..)` syntax: decimal, `0x` hex,
/// `0b` binary, `0o` or leading-zero octal.
pub fn parse_llvm_uint(s: &str) -> Option<u32> {
    let u = parse_radix(s)?;
    u32::try_from(u).ok()
}

/// A signed 32-bit number in LLVM's syntax (see [`parse_llvm_uint`]), with an optional `-`.
pub fn parse_llvm_int(s: &str) -> Option<i32> {
    match s.strip_prefix('-') {
        Some(rest) => {
            let u = parse_radix(rest)?;
            i64::try_from(u)
                .ok()
                .map(|v| -v)
                .and_then(|v| i32::try_from(v).ok())
        }
        None => i32::try_from(parse_radix(s)?).ok(),
    }
}

fn parse_radix(s: &str) -> Option<u64> {
    let (digits, radix) = if let Some(r) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (r, 16)
    } else if let Some(r) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        (r, 2)
    } else if let Some(r) = s.strip_prefix("0o") {
        (r, 8)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// The known option closest to `name` by edit distance, as LLVM suggests "Did you mean".
fn nearest_option(name: &str) -> Option<&'static str> {
    OPTIONS
        .iter()
        .filter(|(n, _)| !matches!(*n, "h" | "###"))
        .map(|(n, _)| (edit_distance(name, n), *n))
        .min_by_key(|(d, _)| *d)
        .filter(|(d, _)| *d <= name.len().max(3))
        .map(|(_, n)| n)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The help text, in the shape of clang-offload-bundler's.
pub const HELP: &str = "\
OVERVIEW: A tool to bundle several input files of the specified type <type> 
referring to the same source file but different targets into a single 
one. The resulting file can also be unbundled into different files by 
this tool if -unbundle is provided.

USAGE: clang-offload-bundler [options]

OPTIONS:

Generic Options:

  --help                  - Display available options (--help-hidden for more)
  --help-list             - Display list of available options (--help-list-hidden for more)
  --version               - Display the version of this program

clang-offload-bundler options:

  --###                   - Print any external commands that are to be executed instead of actually executing them - for testing purposes.
  --allow-missing-bundles - Create empty files if bundles are missing when unbundling.
  --bundle-align=<uint>   - Alignment of bundle for binary files
  --check-input-archive   - Check if input heterogeneous archive is valid in terms of TargetID rules.
  --compress              - Compress output file when bundling.
  --compression-level=<n> - Specify the compression level (integer)
  --hip-openmp-compatible - Treat hip and hipv4 offload kinds as compatible with openmp kind, and vice versa.
  --input=<string>        - Input file. Can be specified multiple times for multiple input files.
  --inputs=<string>       - [<input file>,...] (deprecated)
  --list                  - List bundle IDs in the bundled file.
  --output=<string>       - Output file. Can be specified multiple times for multiple output files.
  --outputs=<string>      - [<output file>,...] (deprecated)
  --targets=<string>      - [<offload kind>-<target triple>,...]
  --type=<string>         - Type of the files to be bundled/unbundled.
                            Current supported types are:
                              i    - cpp-output
                              ii   - c++-cpp-output
                              cui  - cuda-cpp-output
                              hipi - hip-cpp-output
                              d    - dependency
                              ll   - llvm
                              bc   - llvm-bc
                              s    - assembler
                              o    - object
                              a    - archive of objects
                              gch  - precompiled-header
                              ast  - clang AST file
  --unbundle              - Unbundle bundled file into several output files.
  --verbose               - Print debug information.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Options, Vec<String>> {
        let v: Vec<OsString> = args.iter().map(OsString::from).collect();
        parse(&v)
    }

    #[test]
    fn equals_space_and_double_dash_forms() {
        let o = p(&[
            "--type",
            "o",
            "-input",
            "a",
            "--input=b",
            "-targets",
            "x,y",
            "-unbundle",
        ])
        .unwrap();
        assert_eq!(o.files_type.as_deref(), Some("o"));
        assert_eq!(o.input, ["a", "b"]);
        assert_eq!(o.targets, ["x", "y"]);
        assert_eq!(o.targets_count, 1);
        assert!(o.unbundle);
    }

    #[test]
    fn flags_take_boolean_values() {
        let o = p(&["-type=o", "-unbundle=false", "-compress=1", "-verbose=0"]).unwrap();
        assert!(!o.unbundle);
        assert_eq!(o.compress, Some(true));
        assert_eq!(o.verbose, Some(false));
        let e = p(&["-type=o", "-unbundle=maybe"]).unwrap_err();
        assert!(e[0].contains("'maybe' is invalid value for boolean argument"));
    }

    #[test]
    fn a_value_option_consumes_the_next_argument() {
        let o = p(&["-type=o", "-targets", "-unbundle"]).unwrap();
        assert_eq!(o.targets, ["-unbundle"]);
        assert!(!o.unbundle);
        let e = p(&["-type"]).unwrap_err();
        assert_eq!(e[0], "for the --type option: requires a value!");
    }

    #[test]
    fn comma_lists_keep_empty_items_and_input_does_not_split() {
        let o = p(&["-type=o", "-targets=a,", "-inputs=x,y", "-input=p,q"]).unwrap();
        assert_eq!(o.targets, ["a", ""]);
        assert_eq!(o.inputs_deprecated, ["x", "y"]);
        assert_eq!(o.input, ["p,q"]);
    }

    #[test]
    fn unknown_and_positional_arguments_are_errors() {
        let e = p(&["-type=o", "-inputt=4"]).unwrap_err();
        assert!(e[0].starts_with("Unknown command line argument '-inputt=4'."));
        assert_eq!(e[1], "Did you mean '--input=4'?");
        let e = p(&["-type=o", "foo"]).unwrap_err();
        assert_eq!(e.len(), 1);
        let e = p(&["-type=o", "--", "-list"]).unwrap_err();
        assert!(e[0].contains("'-list'"));
    }

    #[test]
    fn missing_type_is_reported_with_other_errors() {
        let e = p(&["---type=o"]).unwrap_err();
        assert_eq!(
            e.last().unwrap(),
            "for the --type option: must be specified at least once!"
        );
        assert!(p(&["-help"]).unwrap().help);
        assert!(p(&["--version"]).unwrap().version);
    }

    #[test]
    fn response_files_expand() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("args");
        std::fs::write(&f, "-type=o \"-input=a b\" -targets='x,y'\n-unbundle").unwrap();
        let o = p(&[&format!("@{}", f.display())]).unwrap();
        assert_eq!(o.files_type.as_deref(), Some("o"));
        assert_eq!(o.input, ["a b"]);
        assert_eq!(o.targets, ["x", "y"]);
        assert!(o.unbundle);
        let e = p(&["-type=o", "@/nonexistent/file"]).unwrap_err();
        assert!(e[0].contains("'@/nonexistent/file'"));
    }

    #[test]
    fn numbers_in_llvm_syntax() {
        assert_eq!(parse_llvm_uint("4096"), Some(4096));
        assert_eq!(parse_llvm_uint("0x10"), Some(16));
        assert_eq!(parse_llvm_uint("010"), Some(8));
        assert_eq!(parse_llvm_uint("-1"), None);
        assert_eq!(parse_llvm_uint("abc"), None);
        assert_eq!(parse_llvm_uint("4294967296"), None);
        assert_eq!(parse_llvm_int("-5"), Some(-5));
        assert_eq!(parse_llvm_int("x"), None);
        let e = p(&["-type=o", "-bundle-align=abc"]).unwrap_err();
        assert_eq!(
            e[0],
            "for the --bundle-align option: 'abc' value invalid for uint argument!"
        );
    }
}
