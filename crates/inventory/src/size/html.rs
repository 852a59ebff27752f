//! The size report as one self-contained HTML page (`gfxkit size --html`, Python's
//! `size(..., html=...)`).

use super::{ArchRow, SizeReport};
use crate::units::{human_bytes, percent as pct, thousands};

/// Text as HTML text or attribute value.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Renders the report as one self-contained HTML page: an inline SVG bar chart of stored bytes
/// per architecture and a sortable table per file. No external assets, no network.
pub fn html(r: &SizeReport) -> String {
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
        esc(&human_bytes(r.stored)),
        esc(&human_bytes(r.uncompressed)),
        r.files.len(),
        r.files.iter().map(|f| f.bundles).sum::<u64>(),
        match r.prune_saves {
            Some(s) => format!(
                " <strong>prune --keep {} would save about {} ({}).</strong>",
                esc(&r.keep.join(",")),
                esc(&human_bytes(s)),
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
            hb = esc(&human_bytes(a.stored)),
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
            esc(&human_bytes(f.file_size)),
            f.bundles,
            esc(&human_bytes(f.stored)),
            esc(&human_bytes(f.uncompressed)),
            match f.prune_saves {
                Some(s) => format!(", prune saves about {}", esc(&human_bytes(s))),
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
                gs = thousands(a.stored),
                gu = thousands(a.uncompressed),
                hs = esc(&human_bytes(a.stored)),
                hu = esc(&human_bytes(a.uncompressed)),
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
