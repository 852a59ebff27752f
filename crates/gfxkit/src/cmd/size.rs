//! `gfxkit size`: where device bytes go, per architecture, file and bundle, and what a prune
//! would save.

use anyhow::Result;
use gfxkit_inventory::size::{self, ArchRow, SizeReport};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Device bytes per architecture, per file and per bundle, compressed (stored) and
/// uncompressed, over files and directory trees. Stored bytes of a compressed bundle are
/// shared out among its entries in proportion to their uncompressed sizes (marked
/// "estimated"). With --keep, also what `gfxkit prune --keep ...` would save. Raw code objects
/// (`.co`, `.hsaco`, file kind `code-object`) and kernel databases (MIOpen `.kdb` records,
/// AOTriton `.aks2` kernels, file kind `kernel-database`) are counted by architecture too.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
gfxkit size /usr/lib/x86_64-linux-gnu/librocsparse.so\n  \
gfxkit size /opt/rocm/lib --by file --keep gfx90a\n  \
gfxkit size /usr/lib/x86_64-linux-gnu --by library\n  \
gfxkit size /opt/rocm/lib --html report.html\n  \
gfxkit size --duplicates /opt/rocm/lib venv/lib/python3.12/site-packages\n\n\
--json prints {archs: [{arch, entries, stored, uncompressed, estimated, kept?}], \
files: [{path, kind, file_size, bundles, stored, uncompressed, prune_saves?, archs}], \
bundles: [{path, member, offset, encoding, stored, uncompressed, targets}], stored, \
uncompressed, keep, prune_saves?, errors, duplicates?}; sizes in bytes, `?` fields only with --keep \
(prune_saves, kept) or --duplicates (duplicates: {bytes, groups: [{sha256, size, count, places: [{path, \
unit, entry}]}]}: identical code objects by the SHA-256 of the uncompressed code object, bytes the \
uncompressed size of every copy beyond the first, the largest saving first). --by library adds \
libraries: [{path, database, files, stored, uncompressed, prune_saves?}]: each library with the \
kernel databases it loads (rocBLAS's rocblas/<version>/library beside librocblas.so), then each \
database no library loads, by its directory or package.")]
pub struct Args {
    /// Files or directories (searched recursively; files without device code are skipped).
    #[arg(value_name = "PATH", default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// Group the table by architecture, file or bundle.
    #[arg(long, value_enum, default_value_t = By::Arch)]
    pub by: By,
    /// Show what keeping only these targets would save (repeatable, or comma-separated).
    #[arg(long, value_name = "TARGET_ID", value_delimiter = ',')]
    pub keep: Vec<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML page (chart per architecture, sortable table per file).
    #[arg(long, value_name = "OUT")]
    pub html: Option<PathBuf>,
    /// Also find identical code objects (by SHA-256 of the uncompressed code object) stored
    /// more than once across the inputs, and what keeping one copy of each would save.
    #[arg(long)]
    pub duplicates: bool,
    /// With --duplicates: how many groups the text lists (JSON lists every one).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
}

/// How the table is grouped.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// One row per architecture (target ID).
    Arch,
    /// One row per file.
    File,
    /// One row per bundle.
    Bundle,
    /// One row per library, with the kernel databases it loads (and one per database no
    /// library loads).
    Library,
}

/// Runs `gfxkit size`.
pub fn run(args: Args) -> Result<ExitCode> {
    let opts = gfxkit_io::whole::SizeOptions {
        keep: size::Keep::parse(&args.keep)?,
        by_library: args.by == By::Library,
        duplicates: args.duplicates,
    };
    let progress = crate::output::Reading::new(args.json);
    let report = gfxkit_io::whole::size(&args.paths, &opts, &progress);
    progress.finish();
    let report = report?;
    if let Some(html) = &args.html {
        let page = render_html(&report);
        let existed = html.exists();
        crate::output::write_atomic(html, page.as_bytes())?;
        if !existed {
            // A report is for reading: world-readable like any file the user creates.
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(html, std::fs::Permissions::from_mode(0o644));
            }
        }
    }
    if args.json {
        crate::output::print_json(&report)?;
    } else {
        let out = &mut std::io::stdout().lock();
        print_text(&report, args.by, out)?;
        if let Some(d) = &report.duplicates {
            print_duplicates(d, args.top, out)?;
        }
    }
    for e in &report.errors {
        // Each of these makes the command exit 2: an error, not a warning.
        eprintln!("gfxkit: error: {e}");
    }
    Ok(if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// A byte count for people: `512 B`, `1.5 MiB` (binary units, one decimal).
pub(crate) fn human(n: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < U.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// Prints the report as a table grouped `by` on `out`.
pub fn print_text(r: &SizeReport, by: By, out: &mut dyn Write) -> Result<()> {
    match by {
        By::Arch => {
            writeln!(
                out,
                "{:<24} {:>8} {:>12} {:>7} {:>14}{}",
                "ARCH",
                "ENTRIES",
                "STORED",
                "SHARE",
                "UNCOMPRESSED",
                if r.keep.is_empty() { "" } else { "  KEEP" }
            )?;
            for a in &r.archs {
                writeln!(
                    out,
                    "{:<24} {:>8} {:>12} {:>7} {:>14}{}",
                    a.arch,
                    a.entries,
                    format!("{}{}", human(a.stored), if a.estimated { "*" } else { "" }),
                    pct(a.stored, r.stored),
                    human(a.uncompressed),
                    match a.kept {
                        Some(true) => "  yes",
                        Some(false) => "  no",
                        None => "",
                    }
                )?;
            }
        }
        By::File => {
            writeln!(
                out,
                "{:>12} {:>12} {:>12} {:>8}{}  FILE",
                "FILE SIZE",
                "STORED",
                "UNCOMPRESSED",
                "BUNDLES",
                if r.keep.is_empty() {
                    ""
                } else {
                    "  PRUNE SAVES"
                }
            )?;
            for f in &r.files {
                writeln!(
                    out,
                    "{:>12} {:>12} {:>12} {:>8}{}  {}",
                    human(f.file_size),
                    human(f.stored),
                    human(f.uncompressed),
                    f.bundles,
                    match f.prune_saves {
                        Some(s) => format!("  {:>11}", human(s)),
                        None => String::new(),
                    },
                    f.path
                )?;
            }
        }
        By::Library => {
            writeln!(
                out,
                "{:>12} {:>12} {:>6}{}  LIBRARY (+ DATABASE)",
                "STORED",
                "UNCOMPRESSED",
                "FILES",
                if r.keep.is_empty() {
                    ""
                } else {
                    "  PRUNE SAVES"
                }
            )?;
            for l in &r.libraries {
                let with: Vec<&str> = l
                    .database
                    .iter()
                    .filter(|d| **d != l.path)
                    .map(String::as_str)
                    .collect();
                writeln!(
                    out,
                    "{:>12} {:>12} {:>6}{}  {}{}",
                    human(l.stored),
                    human(l.uncompressed),
                    l.files,
                    match l.prune_saves {
                        Some(s) => format!("  {:>11}", human(s)),
                        None => String::new(),
                    },
                    l.path,
                    if with.is_empty() {
                        String::new()
                    } else {
                        format!(" (+ {})", with.join(", "))
                    }
                )?;
            }
        }
        By::Bundle => {
            writeln!(
                out,
                "{:>12} {:<14} {:>12} {:>12}  FILE / TARGETS",
                "OFFSET", "ENCODING", "STORED", "UNCOMPRESSED"
            )?;
            for b in &r.bundles {
                writeln!(
                    out,
                    "{:>#12x} {:<14} {:>12} {:>12}  {}{}: {}",
                    b.offset,
                    b.encoding,
                    human(b.stored),
                    human(b.uncompressed),
                    b.path,
                    b.member
                        .as_ref()
                        .map(|m| format!("({m})"))
                        .unwrap_or_default(),
                    b.targets.join(" ")
                )?;
            }
        }
    }
    writeln!(
        out,
        "total: {} device bytes stored ({} uncompressed) in {} files, {} bundles",
        human(r.stored),
        human(r.uncompressed),
        r.files.len(),
        r.bundles.len()
    )?;
    if r.archs.iter().any(|a| a.estimated) {
        writeln!(
            out,
            "* stored bytes of compressed bundles are shared out in proportion to uncompressed sizes"
        )?;
    }
    if let Some(s) = r.prune_saves {
        writeln!(
            out,
            "prune --keep {} would save about {} ({} of device bytes)",
            r.keep.join(","),
            human(s),
            pct(s, r.stored)
        )?;
    }
    Ok(())
}

/// Prints the duplicates: the bytes a deduplication would save, then the `top` groups with
/// the largest saving, each with its places.
pub fn print_duplicates(
    d: &gfxkit_inventory::duplicates::Duplicates,
    top: usize,
    out: &mut dyn Write,
) -> Result<()> {
    let copies: usize = d.groups.iter().map(|g| g.count - 1).sum();
    writeln!(
        out,
        "duplicates: {} code objects stored more than once ({copies} extra copies); keeping one copy of each would save {} ({} bytes)",
        d.groups.len(),
        human(d.bytes),
        group(d.bytes)
    )?;
    for g in d.groups.iter().take(top) {
        writeln!(
            out,
            "  {} x{}  saves {}  sha256 {}",
            human(g.size),
            g.count,
            human(g.saves()),
            &g.sha256[..16.min(g.sha256.len())]
        )?;
        for p in &g.places {
            writeln!(out, "      {}: {}: {}", p.path, p.unit, p.entry)?;
        }
    }
    if d.groups.len() > top {
        writeln!(
            out,
            "  ... and {} more groups (--top N, or --json)",
            d.groups.len() - top
        )?;
    }
    Ok(())
}

/// `1234567` as `1,234,567`.
fn group(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::with_capacity(d.len() + d.len() / 3);
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Renders the report as one self-contained HTML page: an inline SVG bar chart of stored bytes
/// per architecture and a sortable table per file. No external assets, no network.
pub fn render_html(r: &SizeReport) -> String {
    let mut h = String::new();
    h.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>gfxkit size</title>\n<style>\
body{font:14px system-ui,sans-serif;margin:24px;color:#222}\
h1{font-size:20px}h2{font-size:16px;margin-top:28px;word-break:break-all}\
table{border-collapse:collapse;margin:8px 0}\
th,td{padding:3px 10px;border-bottom:1px solid #ddd;text-align:right}\
th:first-child,td:first-child{text-align:left}\
th{cursor:pointer;background:#f3f3f3;user-select:none}\
th[data-dir=asc]::after{content:' \\25B2'}th[data-dir=desc]::after{content:' \\25BC'}\
.bar{fill:#4a7fd6}.bar.drop{fill:#d65a4a}.muted{color:#777}\
</style></head><body>\n<h1>Device code size</h1>\n",
    );
    h.push_str(&format!(
        "<p id=\"summary\">{} device bytes stored ({} uncompressed) in {} files, {} bundles.{}</p>\n",
        esc(&human(r.stored)),
        esc(&human(r.uncompressed)),
        r.files.len(),
        r.bundles.len(),
        match r.prune_saves {
            Some(s) => format!(
                " <strong>prune --keep {} would save about {} ({}).</strong>",
                esc(&r.keep.join(",")),
                esc(&human(s)),
                pct(s, r.stored)
            ),
            None => String::new(),
        }
    ));
    // Chart: one horizontal bar per architecture.
    let max = r.archs.iter().map(|a| a.stored).max().unwrap_or(0).max(1);
    let row_h = 22u64;
    let label_w = 170u64;
    let bar_w = 520u64;
    let height = row_h * r.archs.len() as u64 + 10;
    h.push_str(&format!(
        "<h2>Stored bytes per architecture</h2>\n<svg id=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" \
width=\"{}\" height=\"{height}\" role=\"img\" aria-label=\"stored bytes per architecture\">\n",
        label_w + bar_w + 140
    ));
    for (i, a) in r.archs.iter().enumerate() {
        let y = i as u64 * row_h + 4;
        let w = ((a.stored as u128 * bar_w as u128) / max as u128) as u64;
        let class = if a.kept == Some(false) {
            "bar drop"
        } else {
            "bar"
        };
        h.push_str(&format!(
            "<g class=\"arch\" data-arch=\"{arch}\" data-bytes=\"{b}\">\
<text x=\"{tx}\" y=\"{ty}\" text-anchor=\"end\" font-size=\"13\">{arch}</text>\
<rect class=\"{class}\" x=\"{label_w}\" y=\"{y}\" width=\"{w}\" height=\"{bh}\"><title>{arch}: {b} bytes</title></rect>\
<text x=\"{vx}\" y=\"{ty}\" font-size=\"12\">{hb} ({p})</text></g>\n",
            arch = esc(&a.arch),
            b = a.stored,
            tx = label_w - 8,
            ty = y + 14,
            bh = row_h - 6,
            vx = label_w + w + 6,
            hb = esc(&human(a.stored)),
            p = pct(a.stored, r.stored),
        ));
    }
    h.push_str("</svg>\n");
    if r.archs.iter().any(|a| a.kept == Some(false)) {
        h.push_str("<p class=\"muted\">Red bars: removed by the prune.</p>\n");
    }
    // One sortable table per file.
    for (fi, f) in r.files.iter().enumerate() {
        h.push_str(&format!(
            "<h2>{}</h2>\n<p class=\"muted\">{} file, {} bundles, {} stored, {} uncompressed{}</p>\n",
            esc(&f.path),
            esc(&human(f.file_size)),
            f.bundles,
            esc(&human(f.stored)),
            esc(&human(f.uncompressed)),
            match f.prune_saves {
                Some(s) => format!(", prune saves about {}", esc(&human(s))),
                None => String::new(),
            }
        ));
        h.push_str(&format!(
            "<table class=\"sortable\" id=\"file-{fi}\" data-file=\"{}\"><thead><tr>\
<th data-type=\"text\">Architecture</th><th data-type=\"num\">Entries</th>\
<th data-type=\"num\">Stored bytes</th><th data-type=\"num\">Uncompressed bytes</th>\
<th data-type=\"num\">Share</th></tr></thead><tbody>\n",
            esc(&f.path)
        ));
        // Rows go out in name order; the page's script sorts them by stored bytes on load.
        let mut rows: Vec<&ArchRow> = f.archs.iter().collect();
        rows.sort_by(|a, b| a.arch.cmp(&b.arch));
        for a in rows {
            h.push_str(&format!(
                "<tr data-arch=\"{arch}\"><td>{arch}</td><td data-v=\"{e}\">{e}</td>\
<td data-v=\"{s}\" title=\"{hs}\">{gs}</td><td data-v=\"{u}\" title=\"{hu}\">{gu}</td>\
<td data-v=\"{s}\">{p}</td></tr>\n",
                arch = esc(&a.arch),
                e = a.entries,
                s = a.stored,
                u = a.uncompressed,
                gs = group(a.stored),
                gu = group(a.uncompressed),
                hs = esc(&human(a.stored)),
                hu = esc(&human(a.uncompressed)),
                p = pct(a.stored, f.stored),
            ));
        }
        h.push_str("</tbody></table>\n");
    }
    h.push_str(
        "<script>\n\
function sortTable(t,col,dir){var b=t.tBodies[0];var rows=Array.prototype.slice.call(b.rows);\
var num=t.tHead.rows[0].cells[col].getAttribute('data-type')==='num';\
rows.sort(function(x,y){var a=x.cells[col],c=y.cells[col];\
var va=num?Number(a.getAttribute('data-v')):a.textContent,vc=num?Number(c.getAttribute('data-v')):c.textContent;\
var r=va<vc?-1:va>vc?1:0;return dir==='asc'?r:-r;});\
rows.forEach(function(r){b.appendChild(r);});\
Array.prototype.forEach.call(t.tHead.rows[0].cells,function(h,i){if(i===col){h.setAttribute('data-dir',dir);}else{h.removeAttribute('data-dir');}});\
t.setAttribute('data-sorted',col+'-'+dir);}\n\
document.querySelectorAll('table.sortable').forEach(function(t){\
Array.prototype.forEach.call(t.tHead.rows[0].cells,function(h,i){h.addEventListener('click',function(){\
sortTable(t,i,h.getAttribute('data-dir')==='desc'?'asc':'desc');});});\
sortTable(t,2,'desc');});\n\
</script>\n</body></html>\n",
    );
    h
}
