//! Golden tests of `gfxkit target`: each case runs the built binary and compares exit code,
//! stdout and stderr with `tests/target_cli_golden/<case>.txt`. Re-bless after an intended
//! change with `GFXKIT_BLESS=1 cargo test -p gfxkit --test target_cli`; drift fails.

mod common;

use common::{check_golden, gfxkit};
use gfxkit_spec::PROCESSORS;

fn render(args: &[&str], code: i32, stdout: &str, stderr: &str) -> String {
    format!(
        "$ gfxkit {}\nexit: {code}\n--- stdout\n{stdout}--- stderr\n{stderr}",
        args.join(" ")
    )
}

/// Runs `args` and compares with the golden file of `case` (or writes it when blessing).
fn golden(case: &str, args: &[&str]) -> (i32, String) {
    let (code, stdout, stderr) = gfxkit(args);
    let got = render(args, code, &stdout, &stderr);
    check_golden("target_cli_golden", case, &got);
    (code, stdout)
}

#[test]
fn canon() {
    let (code, out) = golden(
        "canon",
        &[
            "target",
            "canon",
            "gfx90a:xnack-:sramecc+",
            "tonga",
            "gfx9-generic",
            "carrizo:xnack+",
            "gfx906:sram-ecc-",
        ],
    );
    assert_eq!(code, 0);
    assert_eq!(out.lines().next(), Some("gfx90a:sramecc+:xnack-"));
}

#[test]
fn canon_invalid_ids_fail_with_a_reason() {
    let (code, out) = golden(
        "canon_invalid",
        &[
            "target",
            "canon",
            "gfx906",
            "gfx90a:foo+",
            "gfx1030:xnack+",
            "gfx9999",
            "gfx906:xnack",
            "gfx906:xnack+:xnack-",
        ],
    );
    assert_eq!(code, 2);
    assert_eq!(out, "gfx906\n");
}

#[test]
fn canon_every_name_of_the_table() {
    let names: Vec<&str> = PROCESSORS.iter().flat_map(|p| p.names()).collect();
    let mut args = vec!["target", "canon"];
    args.extend(&names);
    let (code, out, err) = gfxkit(&args);
    assert_eq!(code, 0, "{err}");
    let want: Vec<&str> = PROCESSORS
        .iter()
        .flat_map(|p| p.names().map(move |_| p.name))
        .collect();
    assert_eq!(out.lines().collect::<Vec<_>>(), want);
}

#[test]
fn compat() {
    let cases: &[(&str, &[&str], i32)] = &[
        (
            "compat_same",
            &[
                "target",
                "compat",
                "gfx906:xnack+",
                "gfx906:sramecc+:xnack+",
            ],
            0,
        ),
        (
            "compat_any",
            &["target", "compat", "gfx90a", "gfx90a:sramecc-:xnack+"],
            0,
        ),
        (
            "compat_feature",
            &["target", "compat", "gfx906:xnack+", "gfx906:xnack-"],
            1,
        ),
        (
            "compat_processor",
            &["target", "compat", "gfx906", "gfx90a"],
            1,
        ),
        ("compat_alias", &["target", "compat", "tonga", "gfx802"], 0),
        (
            "compat_invalid",
            &["target", "compat", "gfx906:xnack+", "gfx906:bogus+"],
            2,
        ),
    ];
    for (case, args, want) in cases {
        let (code, _) = golden(case, args);
        assert_eq!(code, *want, "{case}");
    }
}

#[test]
fn list_text_and_json() {
    let (code, out) = golden("list", &["target", "list"]);
    assert_eq!(code, 0);
    // Header + one line per row + blank + summary.
    assert_eq!(out.lines().count(), PROCESSORS.len() + 3);
    // Aligned: every row has its MACH column at the same byte offset as the header.
    let col = out.lines().next().unwrap().find("MACH").unwrap();
    for line in out.lines().skip(1).take(PROCESSORS.len()) {
        assert!(line[col..].starts_with("0x"), "misaligned: {line}");
    }

    let (code, out) = golden("list_json", &["target", "list", "--json"]);
    assert_eq!(code, 0);
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), PROCESSORS.len());
    for (row, p) in rows.iter().zip(PROCESSORS) {
        assert_eq!(row["name"], p.name);
        assert_eq!(row["mach"], p.mach);
        assert_eq!(row["in_llvm19"], p.in_llvm19());
    }
}

#[test]
fn show() {
    for (case, args) in [
        ("show_gfx90a", &["target", "show", "gfx90a:xnack+"][..]),
        ("show_alias", &["target", "show", "polaris10"][..]),
        (
            "show_generic_json",
            &["target", "show", "gfx9-generic", "--json"][..],
        ),
        ("show_r600", &["target", "show", "cayman"][..]),
        ("show_invalid", &["target", "show", "gfx1030:sramecc+"][..]),
    ] {
        golden(case, args);
    }
    let (_, out, _) = gfxkit(&["target", "show", "gfx9-generic", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["generic_version"], 1);
    assert_eq!(v["e_flags"]["v6"], 0x0100_0151);
    assert!(v["e_flags"]["v5"].is_null());
    assert_eq!(v["generic_members"].as_array().unwrap().len(), 6);
}

#[test]
fn eflags_encode_and_decode() {
    let cases: &[(&str, &[&str], i32)] = &[
        (
            "eflags_encode_v5",
            &["target", "eflags", "gfx90a:sramecc+:xnack-", "--cov", "5"],
            0,
        ),
        (
            "eflags_encode_v4_any",
            &["target", "eflags", "gfx906", "--cov", "4"],
            0,
        ),
        (
            "eflags_encode_v3",
            &["target", "eflags", "gfx906:xnack-", "--cov", "3"],
            0,
        ),
        (
            "eflags_encode_generic_v6",
            &["target", "eflags", "gfx9-generic", "--cov", "6"],
            0,
        ),
        (
            "eflags_encode_generic_v5",
            &["target", "eflags", "gfx9-generic", "--cov", "5"],
            2,
        ),
        (
            "eflags_decode_v5",
            &["target", "eflags", "--decode", "0x52f", "--cov", "5"],
            0,
        ),
        (
            "eflags_decode_no_prefix",
            &["target", "eflags", "--decode", "e3f", "--cov", "5"],
            0,
        ),
        (
            "eflags_decode_generic",
            &["target", "eflags", "--decode", "0x1000151", "--cov", "6"],
            0,
        ),
        (
            "eflags_decode_unknown",
            &["target", "eflags", "--decode", "0x1fe", "--cov", "5"],
            1,
        ),
        (
            "eflags_decode_reserved",
            &["target", "eflags", "--decode", "0xf053f", "--cov", "5"],
            0,
        ),
        (
            "eflags_decode_v3",
            &["target", "eflags", "--decode", "0x12f", "--cov", "3"],
            0,
        ),
        (
            "eflags_bad_cov",
            &["target", "eflags", "gfx906", "--cov", "9"],
            2,
        ),
        (
            "eflags_bad_hex",
            &["target", "eflags", "--decode", "0xzz", "--cov", "5"],
            2,
        ),
    ];
    for (case, args, want) in cases {
        let (code, _) = golden(case, args);
        assert_eq!(code, *want, "{case}");
    }
    // --cov is required.
    let (code, _, err) = gfxkit(&["target", "eflags", "gfx906"]);
    assert_eq!(code, 2);
    assert!(err.contains("--cov"), "{err}");
}

/// The CLI and the library agree for every row and version.
#[test]
fn eflags_cli_round_trips_every_row() {
    for p in PROCESSORS
        .iter()
        .filter(|p| p.arch == gfxkit_spec::Arch::Amdgcn)
    {
        let cov = if p.is_generic() { "6" } else { "5" };
        let (code, hex, err) = gfxkit(&["target", "eflags", p.name, "--cov", cov]);
        assert_eq!(code, 0, "{}: {err}", p.name);
        let (code, back, err) = gfxkit(&["target", "eflags", "--decode", hex.trim(), "--cov", cov]);
        assert_eq!(code, 0, "{}: {err}", p.name);
        assert_eq!(back.trim(), p.name);
    }
}
