//! `gfxkit memmodel`: one case as annotated assembly, every case as JSON, a family's table as
//! Markdown, and the exit codes.

use std::process::{Command, Output};

fn gfxkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .output()
        .expect("run gfxkit")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn one_case_prints_each_line_with_its_reason() {
    let o = gfxkit(&[
        "memmodel",
        "--cpu",
        "gfx90a",
        "load_atomic;as=global;ord=acquire;scope=system",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = stdout(&o);
    let asm: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with(';'))
        .map(|l| l.split(';').next().unwrap().trim())
        .collect();
    assert_eq!(
        asm,
        [
            "global_load_dword glc",
            "s_waitcnt vmcnt(0)",
            "buffer_invl2",
            "buffer_wbinvl1_vol"
        ]
    );
    assert!(text.lines().skip(1).all(|l| l.contains("; ")), "{text}");
}

#[test]
fn cumode_changes_workgroup_fences() {
    let wgp = gfxkit(&[
        "memmodel",
        "--cpu",
        "gfx1030",
        "fence;ord=acquire;scope=workgroup;mmra=none",
    ]);
    let cu = gfxkit(&[
        "memmodel",
        "--cpu",
        "gfx1030",
        "--cumode",
        "fence;ord=acquire;scope=workgroup;mmra=none",
    ]);
    assert!(stdout(&wgp).contains("buffer_gl0_inv"));
    assert!(!stdout(&cu).contains("buffer_gl0_inv"));
}

#[test]
fn all_json_has_every_case() {
    let o = gfxkit(&[
        "memmodel",
        "--cpu",
        "gfx90a",
        "--tgsplit",
        "--all",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["config"], "gfx90a+tgsplit");
    let cases = v["cases"].as_object().unwrap();
    assert_eq!(cases.len(), 5260);
    let c = &cases["atomicrmw;as=global;ord=acq_rel;scope=workgroup;ret=ret;op=add"];
    assert_eq!(
        c["asm"],
        serde_json::json!([
            "s_waitcnt vmcnt(0) lgkmcnt(0)",
            "global_atomic_add glc",
            "s_waitcnt vmcnt(0)",
            "buffer_wbinvl1_vol"
        ])
    );
    assert!(cases["load;as=constant;flags=plain"]["asm"].is_array());
    assert!(cases["store;as=constant;flags=plain"]["error"].is_string());
}

#[test]
fn table_renders_markdown() {
    let o = gfxkit(&["memmodel", "--table", "gfx12", "--format", "markdown"]);
    assert_eq!(o.status.code(), Some(0));
    let t = stdout(&o);
    assert!(t.contains("| LLVM instr |"));
    assert!(t.contains("`global_inv scope:SCOPE_SYS`"));
    assert!(t.contains("`s_wait_loadcnt 0x0`"));
}

#[test]
fn invalid_case_says_why_and_exits_1() {
    let o = gfxkit(&[
        "memmodel",
        "--cpu",
        "gfx90a",
        "store;as=constant;flags=plain",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("constant"));
}

#[test]
fn malformed_case_and_unknown_processor_exit_2() {
    let o = gfxkit(&["memmodel", "--cpu", "gfx90a", "load;as=global"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("flags="));
    let o = gfxkit(&["memmodel", "--cpu", "gfx9999", "load;as=global;flags=plain"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown processor"));
    let o = gfxkit(&[
        "memmodel",
        "--cpu",
        "gfx90a",
        "--cumode",
        "load;as=global;flags=plain",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn may_move_answers_with_the_constraint() {
    let acq = "load_atomic;as=global;ord=acquire;scope=agent";
    let plain = "load;as=global;flags=plain";
    let o = gfxkit(&["memmodel", "--may-move", acq, plain]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).starts_with("no: acquire"), "{}", stdout(&o));
    let o = gfxkit(&["memmodel", "--may-move", plain, acq]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).starts_with("yes"));
}
