//! Embeds the git commit gfxkit is built from as `GFXKIT_BUILT_FROM` (read by `gfxkit
//! --version`): `GFXKIT_BUILD_COMMIT` when set (a distribution building from a tarball), else
//! `git rev-parse HEAD` of the source tree, else a note that the build is outside git.

use std::process::Command;

fn git(dir: &str, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-env-changed=GFXKIT_BUILD_COMMIT");
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".to_owned());
    let commit = match std::env::var("GFXKIT_BUILD_COMMIT") {
        Ok(c) if !c.trim().is_empty() => format!("commit {}", c.trim()),
        _ => match git(&dir, &["rev-parse", "HEAD"]) {
            Some(head) => {
                // Built again when HEAD moves: HEAD itself, the branch it names, packed refs.
                let mut watch = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
                if let Some(branch) = git(&dir, &["symbolic-ref", "-q", "HEAD"]) {
                    watch.push(branch);
                }
                for w in watch {
                    if let Some(p) = git(
                        &dir,
                        &["rev-parse", "--path-format=absolute", "--git-path", &w],
                    ) {
                        if std::path::Path::new(&p).exists() {
                            println!("cargo:rerun-if-changed={p}");
                        }
                    }
                }
                format!("commit {}", &head[..head.len().min(12)])
            }
            None => "built outside a git checkout: commit unknown".to_owned(),
        },
    };
    println!("cargo:rustc-env=GFXKIT_BUILT_FROM={commit}");
}
