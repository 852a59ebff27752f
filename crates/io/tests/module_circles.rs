//! No file-level circles inside gfxkit-io and gfxkit-inventory: a module that uses another
//! (`crate::other::...`, `use crate::{other, ...}`) is never used back by it, directly or
//! through a chain of modules of the same crate. A shared piece lives in the module that owns
//! it; the modules that need it use that one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crate's modules by name (`split`, `size::html`; `` for lib.rs), each with its source
/// without comments and without its `#[cfg(test)]` module.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p: PathBuf = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            if p.extension() != Some(std::ffi::OsStr::new("rs")) {
                continue;
            }
            let rel = p.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|l| l == "mod" || l == "lib") {
                parts.pop();
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let text = match text.find("#[cfg(test)]\nmod tests") {
                Some(i) => &text[..i],
                None => &text[..],
            };
            let code: String = text
                .lines()
                .map(|l| l.split("//").next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n");
            out.insert(parts.join("::"), code);
        }
    }
    out
}

/// The modules `code` (of module `me`) names through `crate::`.
fn uses(me: &str, code: &str, all: &BTreeMap<String, String>) -> BTreeSet<String> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        let mut names = Vec::new();
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::c}`: every first name in the group.
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            for item in inner.split(',') {
                names.push(item.trim().split("::").next().unwrap_or("").to_owned());
            }
        } else {
            // `crate::a::b::Item`: the longest prefix that is a module.
            let path: String = rest.chars().take_while(|&c| ident(c) || c == ':').collect();
            let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            for k in (1..=segs.len()).rev() {
                let cand = segs[..k].join("::");
                if all.contains_key(&cand) {
                    names.push(cand);
                    break;
                }
            }
        }
        for n in names {
            if !n.is_empty() && n != me && all.contains_key(&n) {
                out.insert(n);
            }
        }
    }
    out
}

/// The circles of the crate at `src`: each as the modules on it, `a -> b -> a`.
fn circles(src: &Path) -> Vec<String> {
    let all = modules(src);
    let graph: BTreeMap<&str, BTreeSet<String>> = all
        .iter()
        .map(|(m, code)| (m.as_str(), uses(m, code, &all)))
        .collect();
    let mut found = Vec::new();
    for start in graph.keys() {
        // A path back to `start` through modules named after it (each circle once).
        let mut stack: Vec<(String, Vec<String>)> = vec![(start.to_string(), vec![])];
        let mut seen = BTreeSet::new();
        while let Some((m, path)) = stack.pop() {
            for next in &graph[m.as_str()] {
                if next == start {
                    let mut c = vec![start.to_string()];
                    c.extend(path.iter().cloned());
                    c.push(m.clone());
                    c.dedup();
                    c.push(start.to_string());
                    found.push(c.join(" -> "));
                } else if next.as_str() > *start && seen.insert(next.clone()) {
                    let mut p = path.clone();
                    if m != *start {
                        p.push(m.clone());
                    }
                    stack.push((next.clone(), p));
                }
            }
        }
    }
    found
}

#[test]
fn no_module_uses_itself_through_other_modules_of_its_crate() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in ["io", "inventory"] {
        let src = crates.join(krate).join("src");
        let c = circles(&src);
        assert!(c.is_empty(), "circles in crates/{krate}: {c:#?}");
    }
    // The walk finds a circle where there is one.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(tmp.path().join("a.rs"), "use crate::b::B;\npub struct A;\n").unwrap();
    std::fs::write(tmp.path().join("b.rs"), "pub struct B(crate::a::A);\n").unwrap();
    assert_eq!(circles(tmp.path()), ["a -> b -> a"]);
}
