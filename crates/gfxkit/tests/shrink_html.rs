//! `gfxkit size --html`: the page is self-contained and, rendered by headless Chromium, shows a
//! chart bar per architecture with the right byte counts and one table per file whose rows
//! the page's script has sorted by stored bytes.

use gfxkit_testkit::HipBuild;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Headless Chromium; missing is a failure that names the fix, never a skip.
fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("GFXKIT_CHROMIUM") {
        return PathBuf::from(p);
    }
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        let p = Path::new(dir).join("chromium");
        if p.is_file() {
            return p;
        }
    }
    panic!("chromium is missing: run `bash scripts/ensure-chromium` (apt-get install chromium)");
}

fn dump_dom(page: &Path) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Values of attribute `attr` in elements whose text starts with `prefix`, in order.
fn attrs(dom: &str, prefix: &str, attr: &str) -> Vec<String> {
    dom.match_indices(prefix)
        .map(|(i, _)| {
            let tag = &dom[i..i + dom[i..].find('>').unwrap()];
            let key = format!("{attr}=\"");
            let at = tag
                .find(&key)
                .unwrap_or_else(|| panic!("{attr} missing in {tag}"));
            let rest = &tag[at + key.len()..];
            rest[..rest.find('"').unwrap()].to_owned()
        })
        .collect()
}

#[test]
fn html_report_renders_chart_and_sorted_tables() {
    let dir = tempfile::tempdir().unwrap();
    let src = gfxkit_testkit::hip_kernels(3);
    let bundles = dir.path().join("bundles");
    std::fs::create_dir(&bundles).unwrap();
    HipBuild::new(
        &src,
        &["gfx90a:xnack+", "gfx90a:xnack-", "gfx1030", "gfx906"],
    )
    .build(&bundles, "plain");
    HipBuild::new(&src, &["gfx90a", "gfx1100"])
        .compressed()
        .build(&bundles, "packed");
    std::fs::remove_file(bundles.join("plain.hip")).unwrap();
    std::fs::remove_file(bundles.join("packed.hip")).unwrap();
    let page = dir.path().join("size.html");
    let o = Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(["size", "--json", "--keep", "gfx90a", "--html"])
        .arg(&page)
        .arg(&bundles)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();

    // Self-contained: no scripts, styles, images or links fetched from anywhere.
    let source = std::fs::read_to_string(&page).unwrap();
    for needle in ["src=", "href=", "<link", "@import", "url("] {
        assert!(
            !source.contains(needle),
            "page refers to an external asset: {needle}"
        );
    }
    assert_eq!(
        source.matches("http").count(),
        source.matches("http://www.w3.org/2000/svg").count()
    );

    let dom = dump_dom(&page);
    // Chart: one bar per architecture, with the byte counts of the JSON report.
    assert!(dom.contains("<svg id=\"chart\""), "no chart");
    let archs = report["archs"].as_array().unwrap();
    let names = attrs(&dom, "<g class=\"arch\"", "data-arch");
    let bytes = attrs(&dom, "<g class=\"arch\"", "data-bytes");
    assert_eq!(names.len(), archs.len());
    for (a, (n, b)) in archs.iter().zip(names.iter().zip(&bytes)) {
        assert_eq!(a["arch"], n.as_str());
        assert_eq!(a["stored"].as_u64().unwrap().to_string(), *b);
    }
    for want in [
        "gfx90a:xnack+",
        "gfx90a",
        "gfx1030",
        "gfx906",
        "gfx1100",
        "host",
    ] {
        assert!(names.iter().any(|n| n == want), "no bar for {want}");
    }
    let widths: Vec<u64> = attrs(&dom, "<rect class=", "width")
        .iter()
        .map(|w| w.parse().unwrap())
        .collect();
    assert_eq!(widths.len(), archs.len());
    assert_eq!(widths[0], 520, "largest bar spans the chart");
    assert!(widths.windows(2).all(|w| w[0] >= w[1]));
    // Dropped architectures are marked.
    let classes = attrs(&dom, "<rect class=", "class");
    for (a, c) in archs.iter().zip(&classes) {
        assert_eq!(a["kept"] == false, c.contains("drop"), "{a}");
    }

    // Tables: one per file, rows sorted by the page's script (written in name order).
    let files = report["files"].as_array().unwrap();
    let sorted = attrs(&dom, "<table class=\"sortable\"", "data-sorted");
    assert_eq!(
        sorted,
        vec!["2-desc".to_owned(); files.len()],
        "script did not run"
    );
    for f in files {
        let path = f["path"].as_str().unwrap();
        let start = dom
            .find(&format!("data-file=\"{path}\""))
            .unwrap_or_else(|| panic!("no table for {path}"));
        let table = &dom[start..start + dom[start..].find("</table>").unwrap()];
        let rows = attrs(table, "<tr data-arch", "data-arch");
        let expect: Vec<String> = f["archs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["arch"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(rows, expect, "{path}: rows not sorted by stored bytes");
        let stored: Vec<u64> = attrs(table, "<td data-v", "data-v")
            .chunks(4)
            .map(|c| c[1].parse().unwrap())
            .collect();
        assert!(stored.windows(2).all(|w| w[0] >= w[1]), "{stored:?}");
    }
    assert!(dom.contains("prune --keep gfx90a would save"));
}
