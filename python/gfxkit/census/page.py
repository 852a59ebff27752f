"""``OUT/report.html``: one self-contained page (no network: inline CSS, inline SVG, a few
lines of inline script to sort tables) for the release manager: the support matrix by package
(packages and installed software x processors, when inputs are package files or installs of
EasyBuild or Spack) and by input (inputs x processors, coloured,
sortable), device bytes per target, what keeping only the required
targets would save, code objects stored more than once, the files that lack a required target,
the inputs holding NVIDIA device code, the errors. Built from the dataset's tables; its size
grows with inputs x processors."""

from __future__ import annotations

import functools
import html
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from . import dataset
from .builds import file_name as _shown_name
from .builds import generic_family_of
from .builds import file_names as _shown_names

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:12px}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:left}
th{background:#f3f3f3;cursor:pointer;position:sticky;top:0}
td.n{text-align:right;font-variant-numeric:tabular-nums}
td.y{background:#4caf50;color:#fff;text-align:center}
td.g{background:#8bc34a;color:#fff;text-align:center}
td.s{background:#90caf9;text-align:center}
td.x{background:#ef9a9a;text-align:center}
td.p{background:#dcedc8;text-align:center}
td.o{background:#fafafa}
.summary td{border:none;padding:1px 12px 1px 0}
.err{color:#b00020;white-space:pre-wrap;font-family:monospace;font-size:11px}
.legend span{display:inline-block;padding:0 6px;margin-right:6px}
tbody.chunk{content-visibility:auto;contain-intrinsic-size:auto 4200px}
"""

#: Rows per ``<tbody>`` of a long table: the browser lays out only the chunks in view.
CHUNK = 200

# Sorts a table by the clicked column (numbers by value, text by text); no network.
_JS = """
document.querySelectorAll('table.sortable th').forEach(function(th){
 th.addEventListener('click',function(){
  var t=th.closest('table'),i=th.cellIndex,up=th.dataset.up!=='1';
  th.dataset.up=up?'1':'0';
  var bs=Array.prototype.slice.call(t.tBodies),rows=[];
  bs.forEach(function(b){rows=rows.concat(Array.prototype.slice.call(b.rows));});
  rows.sort(function(r,s){
   var a=r.cells[i].dataset.v||r.cells[i].textContent,c=s.cells[i].dataset.v||s.cells[i].textContent;
   var x=parseFloat(a),y=parseFloat(c);
   var d=(!isNaN(x)&&!isNaN(y))?x-y:a.localeCompare(c);
   return up?d:-d;});
  var n=Math.ceil(rows.length/bs.length);
  rows.forEach(function(r,k){bs[Math.min(Math.floor(k/n),bs.length-1)].appendChild(r);});});});
"""


def _e(s: Any) -> str:
    return html.escape("" if s is None else str(s), quote=True)


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def _kept_targets(targets: Sequence[str], required: Sequence[str]) -> Dict[str, bool]:
    """Per target ID present, whether a required target would load it (native or generic
    code; SPIR-V is kept only when nothing else is asked for)."""
    from .. import _gfxkit

    out = {}
    for t in targets:
        keep = False
        for r in required:
            try:
                if _gfxkit.compatible(t, r):
                    keep = True
                    break
            except Exception:  # noqa: BLE001 - a target that is not a target ID
                pass
        out[t] = keep
    return out


def _bars(rows: List[Tuple[str, int, int]]) -> str:
    """An SVG bar chart: per target, stored bytes (and uncompressed, lighter)."""
    if not rows:
        return "<p>No device code.</p>"
    top = max(max(s, u) for _, s, u in rows) or 1
    h = 18
    width = 560
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width + 420}" height="{h * len(rows) + 10}" '
        'role="img" aria-label="device bytes per target">'
    ]
    for i, (t, s, u) in enumerate(rows):
        y = 5 + i * h
        wu = max(1, int(width * u / top))
        ws = max(1, int(width * s / top))
        parts.append(
            f'<text x="0" y="{y + 12}" font-size="12">{_e(t)}</text>'
            f'<rect x="170" y="{y + 2}" width="{wu}" height="{h - 5}" fill="#c5cae9"/>'
            f'<rect x="170" y="{y + 2}" width="{ws}" height="{h - 5}" fill="#3f51b5"/>'
            f'<text x="{175 + max(wu, ws)}" y="{y + 12}" font-size="11">{_size(s)} stored, '
            f"{_size(u)} uncompressed</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _escaped(a: Any) -> Any:
    """:func:`_e` of every string of a pyarrow array, in pyarrow (nulls as empty strings)."""
    import pyarrow.compute as pc

    a = pc.fill_null(a, "")
    for old, new in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&#x27;")):
        a = pc.replace_substring(a, old, new)
    return a


def _sizes(a: Any) -> Any:
    """:func:`_size` of every number of a pyarrow array (each distinct number once)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    distinct = pc.unique(a)
    return pc.take(pa.array([_size(v) for v in distinct.to_pylist()], pa.string()),
                   pc.index_in(a, value_set=distinct))


def _input_cell(name: str) -> str:
    """An input's ``<td>``: its name as :func:`_shown_name` gives it, the whole name as its
    title when that differs."""
    shown = _shown_name(name)
    title = f" title='{_e(name)}'" if shown != name else ""
    return f"<td{title}>{_e(shown)}</td>"


def _input_cells(names: Any) -> Any:
    """:func:`_input_cell` of every name of a pyarrow array, in pyarrow."""
    import pyarrow.compute as pc

    shown = _shown_names(names)
    titled = pc.binary_join_element_wise(" title='", _escaped(names), "'", "")
    titles = pc.if_else(pc.equal(shown, names), "", titled)
    return pc.binary_join_element_wise("<td", titles, ">", _escaped(shown), "</td>", "")


def _package_rows(packages: Any, shown: Sequence[str], req_procs: set) -> List[str]:
    """The support by package (HTML rows) from the ``packages`` table
    (:func:`builds.packages`): a row per package or installed software, its builds, versions,
    builds with device code and their device bytes, and per processor of ``shown`` how many
    of those builds carry code for it (all: green; some: pale, the others named in the title;
    none, where required: red)."""
    if packages is None or packages.num_rows == 0:
        return []
    rows: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for r in packages.to_pylist():
        g = rows.setdefault((r["layout"], r["package"]), dict(r, per={}))
        if r["processor"] is not None:
            g["per"][r["processor"]] = r
    out = []
    for (layout, name), g in sorted(rows.items(), key=lambda kv: (kv[0][1].lower(), kv[0][0])):
        n = g["builds_with_device_code"]
        cells = []
        for p in shown:
            r = g["per"].get(p)
            k = r["builds_with"] if r else 0
            native = r["builds_native"] if r else 0
            if n and k == n and native == n:
                cells.append(f"<td class='y' data-v='{k}'>{k}/{n}</td>")
            elif n and k == n:
                # Every build loads on it, some through generic or SPIR-V code only.
                cells.append(
                    f"<td class='g' data-v='{k}' title='native code in {native}: the others "
                    f"through generic or SPIR-V code'>{k}/{n}</td>"
                )
            elif k:
                lacking = [_shown_name(b) for b in r["without"]]
                title = ", ".join(lacking[:20]) + (f" and {len(lacking) - 20} more" if len(lacking) > 20 else "")
                cells.append(f"<td class='p' data-v='{k}' title='without: {_e(title)}'>{k}/{n}</td>")
            elif n and p in req_procs:
                cells.append(f"<td class='x' data-v='0'>0/{n}</td>")
            else:
                cells.append("<td class='o' data-v='0'></td>")
        db = g["device_bytes"]
        out.append(
            f"<tr><td>{_e(name)}</td><td>{_e(layout)}</td><td class='n'>{g['builds']}</td>"
            f"<td class='n'>{g['versions']}</td><td class='n'>{n}</td>"
            f"<td class='n' data-v='{db}'>{_size(db)}</td>" + "".join(cells) + "</tr>"
        )
    return out


def _in_order_of(groups: Any, key: str, rows: Any) -> Any:
    """``groups`` (a table with a column ``key``, a row per value) in the order its values
    first appear in ``rows`` (an array of them): pyarrow's grouping promises no order."""
    import pyarrow.compute as pc

    return groups.take(pc.sort_indices(pc.index_in(groups[key], value_set=rows)))


def _sorted_lists(lists: Any) -> Any:
    """Each list of a pyarrow list array, sorted: pyarrow's grouping promises no order
    within a group's list either."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    values = (
        pa.table({"list": pc.list_parent_indices(lists), "value": pc.list_flatten(lists)})
        .sort_by([("list", "ascending"), ("value", "ascending")])["value"]
        .combine_chunks()
    )
    lengths = pc.list_value_length(lists).cast(pa.int32())
    offsets = pa.concat_arrays([pa.array([0], pa.int32()), pc.cumulative_sum(lengths)])
    return pa.ListArray.from_arrays(offsets, values)


def _matrix_rows(targets: Any, inputs: Any, shown: Sequence[str], req_procs: set) -> List[str]:
    """The support matrix's rows (HTML), one per input of ``inputs`` (sorted, with
    ``device_bytes`` and ``code_objects``), from the ``targets`` table (each input's target
    IDs, sorted by input and target ID): a cell per processor of ``shown`` naming the feature
    settings of the target IDs present, ``-`` where a required processor is missing. Built
    column by column in pyarrow: the cells repeat (a cell per distinct set of target IDs), the
    inputs are many."""
    import pyarrow as pa
    import pyarrow.compute as pc

    # Per input and processor, its target IDs.
    present = targets.group_by(["input", "processor"]).aggregate([("target_id", "list")])
    titles = pc.binary_join(_sorted_lists(present["target_id_list"]), ", ")
    keys = pc.dictionary_encode(
        pc.binary_join_element_wise(present["processor"], titles, "\0")
    ).combine_chunks()
    html_ = []
    for key in keys.dictionary.to_pylist():
        p, title = key.split("\0", 1)
        feats = sorted(t.split(":", 1)[1] if ":" in t else "any" for t in title.split(", "))
        cls = "s" if p == "amdgcnspirv" else ("g" if "generic" in p else "y")
        html_.append(f"<td class='{cls}' title='{_e(title)}'>{_e(' '.join(feats))}</td>")
    cells = pc.take(pa.array(html_, pa.string()), keys.indices)

    names = inputs["input"]
    db = inputs["device_bytes"]
    parts = ["<tr>", _input_cells(names), "<td class='n' data-v='", pc.cast(db, pa.string())]
    columns = [pc.binary_join_element_wise(*parts, "'>", _sizes(db), "</td>", "")]
    # An input with code objects: every processor without a cell is missing there.
    filled = pc.or_(
        pc.is_in(names, value_set=present["input"]),
        pc.greater(pc.fill_null(inputs["code_objects"], 0), 0),
    )
    for p in shown:
        at = pc.equal(present["processor"], p)
        found = pc.take(cells.filter(at), pc.index_in(names, value_set=present["input"].filter(at)))
        missing = "<td class='x'>-</td>" if p in req_procs else "<td class='o'></td>"
        otherwise = pc.if_else(filled, missing, "<td class='o'></td>")
        if p in req_procs:
            # A required processor without native code the runtime still loads through its
            # generic target's code or SPIR-V: not missing (the lacks follow the whole rule).
            family = generic_family_of(p)
            for by in [f for f in (family, "amdgcnspirv") if f]:
                through = present["input"].filter(pc.equal(present["processor"], by))
                cell = f"<td class='g' title='no native code: loads through {_e(by)}'>{_e(by)}</td>"
                otherwise = pc.if_else(pc.is_in(names, value_set=through), cell, otherwise)
        columns.append(pc.coalesce(found, otherwise))
    columns.append("</tr>")
    return pc.binary_join_element_wise(*columns, "").to_pylist()


def build(tables: Dict[str, Any], required: Sequence[str]) -> str:
    """The report's HTML from the dataset's tables (:func:`dataset.derive`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    co = tables["code_objects"]
    ins = tables["inputs"]
    lacks = tables["lacks"]
    from .. import __version__

    # Inputs in the order of the names the page shows them by (a download by its file name).
    listed = ins.select(["input", "device_bytes", "nvidia_bytes", "code_objects", "status", "error"])
    listed = (
        listed.append_column("shown", _shown_names(listed["input"]))
        .sort_by([("shown", "ascending"), ("input", "ascending")])
        .drop_columns(["shown"])
    )
    # Python rows only of the inputs the page lists one by one (errors, NVIDIA code).
    errors = listed.filter(pc.not_equal(listed["status"], "ok")).to_pylist()
    # Null in rows written before the column was (an earlier gfxkit): not known, left out.
    nvidia = listed.filter(pc.greater(pc.fill_null(listed["nvidia_bytes"], 0), 0)).to_pylist()
    with_code = int(pc.sum(pc.greater(pc.fill_null(listed["code_objects"], 0), 0)).as_py() or 0)
    n = co.num_rows
    named = co.select(
        ["input", "target_id", "processor", "stored_bytes", "uncompressed_bytes", "sha256"]
    ).filter(pc.is_valid(co["target_id"]))

    # Per target, bytes stored and uncompressed (targets in the order the rows first name them).
    sums = _in_order_of(
        named.group_by("target_id").aggregate([("stored_bytes", "sum"), ("uncompressed_bytes", "sum")]),
        "target_id",
        named["target_id"],
    )
    per_target: Dict[str, List[int]] = {
        t: [s, u]
        for t, s, u in zip(
            sums["target_id"].to_pylist(),
            sums["stored_bytes_sum"].to_pylist(),
            sums["uncompressed_bytes_sum"].to_pylist(),
        )
    }
    processors = sorted(set(named["processor"].unique().to_pylist()), key=_proc_key)

    # The code objects stored more than once: (SHA-256, target, size, copies, stored, inputs),
    # in the order the rows first name them.
    hashed = named.filter(pc.not_equal(pc.fill_null(named["sha256"], ""), ""))
    # Only the digests seen twice or more are grouped (in the order of the rows).
    counts = pc.value_counts(hashed["sha256"])
    twice = counts.field("values").filter(pc.greater(counts.field("counts"), 1))
    hashed = hashed.filter(pc.is_in(hashed["sha256"], value_set=twice))
    copies = hashed.group_by("sha256").aggregate(
        [("sha256", "count"), ("stored_bytes", "sum"), ("input", "count_distinct")]
    )
    # In the order the rows first name them, with the target and size of that first row.
    at = pc.index_in(copies["sha256"], value_set=hashed["sha256"])
    order = pc.sort_indices(at)
    copies, first = copies.take(order), pc.take(at, order)
    dups = list(
        zip(
            copies["sha256"].to_pylist(),
            pc.take(hashed["target_id"], first).to_pylist(),
            pc.take(hashed["uncompressed_bytes"], first).to_pylist(),
            copies["sha256_count"].to_pylist(),
            copies["stored_bytes_sum"].to_pylist(),
            copies["input_count_distinct"].to_pylist(),
        )
    )
    dups.sort(key=lambda d: -(d[4] - d[4] // d[3]))
    # Where the copies shown are (the page lists the first 1,000).
    where: Dict[str, List[str]] = {}
    if dups:
        shown_h = pa.array([d[0] for d in dups[:1000]], pa.string())
        w_t = (
            hashed.filter(pc.is_in(hashed["sha256"], value_set=shown_h))
            .group_by("sha256")
            .aggregate([("input", "distinct")])
        )
        where = dict(zip(w_t["sha256"].to_pylist(), w_t["input_distinct"].to_pylist()))

    total_stored = sum(v[0] for v in per_target.values())
    total_unc = sum(v[1] for v in per_target.values())
    out: List[str] = []
    w = out.append
    w("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>")
    w("<title>gfxkit census</title><style>" + _CSS + "</style></head><body>")
    w("<h1>gfxkit census</h1><table class='summary'>")
    for k, v in [
        ("inputs", listed.num_rows),
        ("inputs with device code", with_code),
        ("code objects", n),
        ("device bytes (stored)", _size(total_stored)),
        ("device bytes (uncompressed)", _size(total_unc)),
        ("processors", len(processors)),
        ("inputs with errors", len(errors)),
        ("inputs with NVIDIA device code", len(nvidia)),
        ("required", ", ".join(required) or "(none given)"),
        ("lacks judged for", f"ROCm {tables['rocm']}" if tables.get("rocm") else "the newest runtime"),
        ("schema", f"{dataset.SCHEMA_VERSION} (gfxkit {__version__})"),
    ]:
        w(f"<tr><td>{_e(k)}</td><td><b>{_e(v)}</b></td></tr>")
    w("</table>")

    req_procs = {r.split(":")[0] for r in required}
    # The required processors first, then the others.
    shown = sorted(req_procs, key=_proc_key) + [p for p in processors if p not in req_procs]

    # Support by package and by installed software (when inputs are package files or lie in
    # installs of EasyBuild or Spack: versions and platforms of one name).
    rows = _package_rows(tables.get("packages"), shown, req_procs)
    if rows:
        w("<h2 id='packages'>Support by package</h2>")
        w(
            "<p class='legend'><span style='background:#4caf50;color:#fff'>every build</span>"
            "<span style='background:#8bc34a;color:#fff'>every build, some through generic or SPIR-V code</span>"
            "<span style='background:#dcedc8'>some builds</span>"
            "<span style='background:#ef9a9a'>required, in none</span>"
            " A row per name: package files (wheel, sdist, .deb, .rpm, conda; each file a build) "
            "and software installed by EasyBuild (EESSI) or Spack (each install a build), across "
            "versions and platforms; per processor, how many of its builds with device code carry "
            "code the runtime can load on it: its own, its generic target's or SPIR-V (the title "
            "names those that do not; the lacks below follow the whole rule).</p>"
        )
        w(
            "<table class='sortable' id='package-table'><thead><tr><th>package</th><th>layout</th>"
            "<th>builds</th><th>versions</th><th>with device code</th><th>device bytes</th>"
        )
        for p in shown:
            w(f"<th>{_e(p)}</th>")
        w("</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")

    # Support matrix.
    w("<h2 id='matrix'>Support matrix</h2>")
    w(
        "<p class='legend'><span style='background:#4caf50;color:#fff'>native</span>"
        "<span style='background:#8bc34a;color:#fff'>generic</span>"
        "<span style='background:#90caf9'>SPIR-V</span>"
        "<span style='background:#ef9a9a'>required, missing</span>"
        " Click a column to sort. A cell names the target IDs' feature settings.</p>"
    )
    w("<table class='sortable' id='matrix-table'><thead><tr><th>input</th><th>device bytes</th>")
    for p in shown:
        w(f"<th>{_e(p)}</th>")
    w("</tr></thead>")
    rows = _matrix_rows(tables["targets"], listed, shown, req_procs)
    for k in range(0, len(rows), CHUNK):
        w(("</tbody>" if k else "") + "<tbody class='chunk'>")
        w("".join(rows[k : k + CHUNK]))
    w("</tbody></table>" if listed.num_rows else "<tbody></tbody></table>")

    # Bytes per target.
    w("<h2 id='bytes'>Device bytes per target</h2>")
    rows = sorted(((t, v[0], v[1]) for t, v in per_target.items()), key=lambda x: -x[1])
    w(_bars(rows))

    # Savings.
    w("<h2 id='savings'>Keeping only the required targets</h2>")
    if required:
        kept = _kept_targets(list(per_target), required)
        drop = [(t, v[0], v[1]) for t, v in per_target.items() if not kept[t]]
        saved = sum(s for _, s, _ in drop)
        w(
            f"<p>Dropping the code objects no required target ({_e(', '.join(required))}) would "
            f"load saves <b>{_size(saved)}</b> of {_size(total_stored)} stored "
            f"({100.0 * saved / max(total_stored, 1):.1f}%).</p>"
        )
        w("<table class='sortable'><thead><tr><th>target dropped</th><th>stored</th><th>uncompressed</th></tr></thead><tbody>")
        for t, s, u in sorted(drop, key=lambda x: -x[1]):
            w(f"<tr><td>{_e(t)}</td><td class='n' data-v='{s}'>{_size(s)}</td><td class='n' data-v='{u}'>{_size(u)}</td></tr>")
        w("</tbody></table>")
    else:
        w("<p>No required targets given (<code>--require gfx90a,gfx942,...</code>).</p>")

    # Duplicates.
    dup_saved = sum(stored - stored // count for _, _, _, count, stored, _ in dups)
    w("<h2 id='duplicates'>Code objects stored more than once</h2>")
    w(
        f"<p>{len(dups)} code objects are stored more than once; one copy each would save "
        f"<b>{_size(dup_saved)}</b> stored.</p>"
    )
    if dups:
        w(
            "<table class='sortable'><thead><tr><th>SHA-256</th><th>target</th><th>copies</th>"
            "<th>inputs</th><th>size</th><th>one copy saves</th></tr></thead><tbody>"
        )
        for h, t, size, count, stored, in_inputs in dups[:1000]:
            save = stored - stored // count
            w(
                f"<tr><td><code>{_e(h[:16])}</code></td><td>{_e(t)}</td><td class='n'>{count}</td>"
                f"<td class='n' title='{_e(', '.join(sorted(where[h]))[:2000])}'>{in_inputs}</td>"
                f"<td class='n' data-v='{size}'>{_size(size)}</td><td class='n' data-v='{save}'>{_size(save)}</td></tr>"
            )
        w("</tbody></table>")
        if len(dups) > 1000:
            w(f"<p>and {len(dups) - 1000} more (query the dataset).</p>")

    # Lacks.
    w("<h2 id='lacks'>Files that lack a required target</h2>")
    if lacks is None:
        w("<p>No required targets given.</p>")
    elif lacks.num_rows == 0:
        w("<p>Every file with device code carries every required target.</p>")
    else:
        lk = lacks.to_pylist()
        w(f"<p>{len(lk)} (file, target) pairs in {len({x['input'] for x in lk})} inputs.</p>")
        w("<table class='sortable'><thead><tr><th>input</th><th>file</th><th>lacks</th><th>why</th></tr></thead><tbody>")
        for x in lk[:5000]:
            w(f"<tr>{_input_cell(x['input'])}<td>{_e(x['path'])}</td><td>{_e(x['required'])}</td><td>{_e(x['why'])}</td></tr>")
        w("</tbody></table>")
        if len(lk) > 5000:
            w(f"<p>and {len(lk) - 5000} more (lacks.parquet).</p>")

    # NVIDIA device code.
    w("<h2 id='nvidia'>NVIDIA device code</h2>")
    if not nvidia:
        w("<p>No input holds NVIDIA device code.</p>")
    else:
        cuda = sum(1 for r in nvidia if not r["code_objects"])
        w(
            "<p>Inputs holding NVIDIA device code (CUDA fat binaries, which no AMD GPU runs): "
            f"<b>{len(nvidia)}</b>; of those, holding no AMD code object (CUDA builds, installed "
            f"where a ROCm build was meant or shipped beside one): <b>{cuda}</b>. A package is one "
            "input: <code>gfxkit list</code> names its members that hold it.</p>"
        )
        w(
            "<table class='sortable'><thead><tr><th>input</th><th>NVIDIA device bytes</th>"
            "<th>AMD device bytes</th></tr></thead><tbody>"
        )
        for r in nvidia:
            nv, amd = r["nvidia_bytes"], r["device_bytes"]
            w(
                f"<tr>{_input_cell(r['input'])}<td class='n' data-v='{nv}'>{_size(nv)}</td>"
                f"<td class='n' data-v='{amd}'>{_size(amd)}</td></tr>"
            )
        w("</tbody></table>")

    # Errors.
    w("<h2 id='errors'>Errors</h2>")
    if not errors:
        w("<p>Every input was read without error.</p>")
    else:
        w("<table class='sortable'><thead><tr><th>input</th><th>status</th><th>error</th></tr></thead><tbody>")
        for r in errors:
            w(f"<tr>{_input_cell(r['input'])}<td>{_e(r['status'])}</td><td class='err'>{_e(r['error'])}</td></tr>")
        w("</tbody></table>")
    w("<script>" + _JS + "</script></body></html>")
    return "".join(out)


def _proc_key(p: str) -> Tuple[int, str]:
    """Processors in the order of gfxkit's processor table (by family and generation: gfx900,
    gfx906, gfx90a, gfx942, gfx1030, ..., generic targets after them), SPIR-V and any name the
    table does not know last."""
    if p == "amdgcnspirv":
        return (2, p)
    at = _table_order().get(p)
    return (0, f"{at:05d}") if at is not None else (1, p)


@functools.lru_cache(maxsize=None)
def _table_order() -> Dict[str, int]:
    from .. import _gfxkit

    return {row["name"]: i for i, row in enumerate(_gfxkit.processors())}


def write_report(out: Path, tables: Dict[str, Any], required: Sequence[str]) -> Path:
    """Writes ``out/report.html`` atomically; returns its path."""
    path = Path(out) / "report.html"
    dataset.write_text(build(tables, required), path)
    return path
