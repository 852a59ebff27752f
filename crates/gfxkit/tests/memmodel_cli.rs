//! `gfxkit memmodel`: one case as annotated assembly, every case as JSON, a family's table as
//! Markdown, LLVM IR input, the LLVM release chosen with --llvm, and the exit codes.

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
        "--llvm",
        "19",
        "--all",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["config"], "gfx90a+tgsplit");
    assert_eq!(v["llvm"], "19");
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
    // LLVM 22 (the default) selects a store to the constant address space.
    let o = gfxkit(&["memmodel", "--cpu", "gfx90a", "--all", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["llvm"], "22");
    assert_eq!(
        v["cases"]["store;as=constant;flags=plain"]["asm"],
        serde_json::json!(["global_store_dword"])
    );
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
        "--llvm",
        "19",
        "store;as=constant;flags=plain",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("constant"));
}

/// The lowering of the chosen release: a GFX12 agent-scope release writes back to device
/// scope in LLVM 19 only.
#[test]
fn llvm_release_chooses_the_rows() {
    let fence = "fence syncscope(\"agent\") release";
    let asm = |llvm: &str| {
        let o = gfxkit(&[
            "memmodel", "--cpu", "gfx1200", "--llvm", llvm, "--json", fence,
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["llvm"], llvm);
        assert_eq!(v["case"], "fence;ord=release;scope=agent;mmra=none");
        v["asm"].clone()
    };
    let v19 = asm("19");
    let v22 = asm("22");
    assert_eq!(v19[0], "global_wb scope:SCOPE_DEV");
    assert!(v22
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l != "global_wb scope:SCOPE_DEV"));
    assert_eq!(v22[0], "s_wait_bvhcnt 0x0");
    // The default is the newest release.
    let o = gfxkit(&["memmodel", "--cpu", "gfx1200", "--json", fence]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["asm"], v22);
    // gfx940 is gone from LLVM 22; LLVM 19 still has it.
    let o = gfxkit(&["memmodel", "--cpu", "gfx940", fence]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("removed in LLVM 21"));
    let o = gfxkit(&["memmodel", "--cpu", "gfx940", "--llvm", "19", fence]);
    assert_eq!(o.status.code(), Some(0));
    let o = gfxkit(&["memmodel", "--cpu", "gfx940", "--llvm", "20", fence]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn llvm_ir_input_is_the_same_case_as_its_key() {
    let ir = gfxkit(&[
        "memmodel",
        "--cpu",
        "gfx90a",
        "load atomic i32, ptr addrspace(1) %p syncscope(\"agent\") acquire, align 4",
    ]);
    let key = gfxkit(&[
        "memmodel",
        "--cpu",
        "gfx90a",
        "load_atomic;as=global;ord=acquire;scope=agent",
    ]);
    assert_eq!(
        ir.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ir.stderr)
    );
    assert_eq!(stdout(&ir), stdout(&key));
    assert!(stdout(&ir)
        .starts_with("; load_atomic;as=global;ord=acquire;scope=agent on gfx90a (LLVM 22)"));
    // A result makes atomicrmw return the old value.
    let o = gfxkit(&[
        "memmodel",
        "--cpu",
        "gfx950",
        "--json",
        "%old = atomicrmw add ptr %p, i32 %v syncscope(\"workgroup\") acq_rel",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["case"],
        "atomicrmw;as=generic;ord=acq_rel;scope=workgroup;ret=ret;op=add"
    );
    // A bad token is named with its byte position; exit 2.
    let o = gfxkit(&[
        "memmodel",
        "--cpu",
        "gfx90a",
        "load atomic i32, ptr addrspace(1) %p syncscope(\"agent\") release, align 4",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("at byte 56 (`release`)"), "{err}");
    assert!(err.contains("cannot have ordering"), "{err}");
}

/// The cluster scope (LLVM 22) belongs to GFX12.5: `SCOPE_SE` there, refused elsewhere.
#[test]
fn cluster_scope_only_where_clusters_exist() {
    let ir = "load atomic i32, ptr addrspace(1) %p syncscope(\"cluster\") acquire, align 4";
    let o = gfxkit(&["memmodel", "--cpu", "gfx1250", "--json", ir]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["case"], "load_atomic;as=global;ord=acquire;scope=cluster");
    assert_eq!(
        v["asm"],
        serde_json::json!([
            "global_load_b32 scope:SCOPE_SE",
            "s_wait_loadcnt 0x0",
            "global_inv scope:SCOPE_SE"
        ])
    );
    // The key form and gfx1251 too; a release at cluster scope writes nothing back.
    let o = gfxkit(&[
        "memmodel",
        "--cpu",
        "gfx1251",
        "--json",
        "store_atomic;as=global;ord=release;scope=cluster-one-as",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["asm"],
        serde_json::json!([
            "s_wait_loadcnt 0x0",
            "s_wait_storecnt 0x0",
            "s_wait_xcnt 0x0",
            "global_store_b32 scope:SCOPE_SE"
        ])
    );
    // Every case of gfx1250 includes the cluster scopes.
    let o = gfxkit(&["memmodel", "--cpu", "gfx1250", "--all", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["cases"].as_object().unwrap().len(), 6300);
    // Elsewhere: not valid on the target, with the reason.
    for cpu in ["gfx942", "gfx1200"] {
        let o = gfxkit(&["memmodel", "--cpu", cpu, ir]);
        assert_eq!(o.status.code(), Some(1), "{cpu}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("has no clusters"), "{cpu}: {err}");
        assert!(err.contains("agent"), "{cpu}: {err}");
    }
    // GFX12.5 has no LLVM 19 rows.
    let o = gfxkit(&["memmodel", "--cpu", "gfx1250", "--llvm", "19", ir]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("new in LLVM 21"));
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
