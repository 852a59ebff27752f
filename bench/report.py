#!/usr/bin/env python3
"""Writes docs/performance.md and docs/performance.svg from bench/floor.sh's runs.

    report.py RESULTS_TSV DOCS_DIR key=value...

RESULTS_TSV has one line per timed run, in the order run: "<name>\t<wall seconds>\t<peak
RssAnon KiB>\t<CPU seconds>". A row compares gfxkit with its floor by the ratios of the runs
made side by side (the k-th run of one with the k-th of the other, alternated in one round):
their median, and their range as the spread.
"""
import statistics
import sys
from datetime import datetime, timezone

runs = {}
for line in open(sys.argv[1]):
    name, wall, peak, cpu_s = line.rstrip("\n").split("\t")
    runs.setdefault(name, []).append((float(wall), int(peak), float(cpu_s)))
docs = sys.argv[2]
kv = dict(a.split("=", 1) for a in sys.argv[3:])
n = {k: int(v) for k, v in kv.items() if v.isdigit()}
MiB = 1 << 20


def t(name):
    """Median wall time."""
    return statistics.median(r[0] for r in runs[name])


def pairs(a, b):
    """Median, least and greatest ratio of a's wall time to b's, round by round."""
    q = [x[0] / max(y[0], 1e-9) for x, y in zip(runs[a], runs[b])]
    return statistics.median(q), min(q), max(q)


def ratio(a, b):
    return pairs(a, b)[0]


def spread(a, b):
    """"1.05x (0.98-1.12)": the median ratio and its range."""
    m, lo, hi = pairs(a, b)
    return f"{m:.2f}x ({lo:.2f}-{hi:.2f})"


def mem(name):
    return max(r[1] for r in runs[name]) * 1024


def cpu_t(name):
    return statistics.median(r[2] for r in runs[name])


def cpu(name, ref):
    """gfxkit's CPU time and its ratio to `ref`'s (medians)."""
    return f"{cpu_t(name) * 1000:,.0f} ms ({cpu_t(name) / max(cpu_t(ref), 1e-6):.2f}x)"


def ms(s):
    return f"{s * 1000:,.0f} ms" if s < 10 else f"{s:,.1f} s"


def mib(b):
    return f"{b / MiB:,.0f} MiB" if b >= 10 * MiB else f"{b / MiB:,.1f} MiB"


def ok(flag):
    return "yes" if flag else "**no**"


rows = []  # (operation, gfxkit, floor, vs floor, clang, vs clang, memory, goal, met)
# decompress
r = ratio("dec.gfxkit", "dec.md5")
m = mem("dec.gfxkit")
rows.append((
    f"`decompress` the largest bundle, CCOB v2 by clang ({n['cz'] / 1e6:.1f} MB -> {n['out'] / 1e6:.1f} MB), "
    "its MD5 checked",
    ms(t("dec.gfxkit")),
    f"`zstd -d` beside `md5sum` of its output {ms(t('dec.md5'))} (`zstd -d` alone {ms(t('dec.zstd'))}, "
    f"{ratio('dec.gfxkit', 'dec.zstd'):.2f}x)",
    spread("dec.gfxkit", "dec.md5"), "-", "-",
    f"{mib(m)} (`zstd -d`: {mib(mem('dec.zstd'))})",
    "<= 1.3x `zstd -d` beside `md5sum`; <= output + 32 MiB",
    ok(r <= 1.3 and m <= n["out"] + 32 * MiB),
))
# extract
r = ratio("ext.gfxkit", "ext.cp")
rc = ratio("ext.gfxkit", "ext.clang")
rows.append((
    f"`extract` every entry of that bundle uncompressed ({n['bundle'] / 1e6:.1f} MB)",
    ms(t("ext.gfxkit")), f"`cp` {ms(t('ext.cp'))}", spread("ext.gfxkit", "ext.cp"),
    ms(t("ext.clang")), f"{rc:.2f}x", mib(mem("ext.gfxkit")), "<= 1.2x `cp`", ok(r <= 1.2),
))
# compress
r = ratio("cmp.gfxkit", "cmp.zstd")
rc = ratio("cmp.gfxkit", "cmp.clang")
rows.append((
    f"`compress` that bundle (default); output {n['gz']:,} bytes, clang's {n['cz']:,}, "
    f"`zstd -3 --long -T0` {n['zz']:,}",
    ms(t("cmp.gfxkit")), f"`zstd -3 --long -T0` {ms(t('cmp.zstd'))}", spread("cmp.gfxkit", "cmp.zstd"),
    ms(t("cmp.clang")), spread("cmp.gfxkit", "cmp.clang"), mib(mem("cmp.gfxkit")),
    "<= 0.6x clang; output no larger than clang's", ok(rc <= 0.6 and n["gz"] <= n["cz"]),
))
# prune
r = ratio("prune.gfxkit", "prune.cp")
m = mem("prune.gfxkit")
rows.append((
    f"`prune --keep gfx90a` librocsparse ({n['lib'] / 1e6:,.0f} MB -> {n['pruned'] / 1e6:,.0f} MB)",
    ms(t("prune.gfxkit")), f"`cp` {ms(t('prune.cp'))}", spread("prune.gfxkit", "prune.cp"), "-", "-", mib(m),
    "<= 2x `cp`; <= 256 MiB", ok(r <= 2 and m <= 256 * MiB),
))
# recompress
r = ratio("rec.gfxkit", "rec.zstd")
rows.append((
    f"`recompress` librocsparse to CCOB v2 ({n['lib'] / 1e6:,.0f} MB -> {n['recompressed'] / 1e6:,.0f} MB; "
    f"`.hip_fatbin` by zstd: {n['fz'] / 1e6:,.0f} MB)",
    ms(t("rec.gfxkit")), f"`zstd -3 --long -T0` of `.hip_fatbin` {ms(t('rec.zstd'))}",
    spread("rec.gfxkit", "rec.zstd"),
    "-", "-", mib(mem("rec.gfxkit")), "<= 1.2x `zstd -3 --long -T0`", ok(r <= 1.2),
))
# kpack split
r = ratio("split.gfxkit", "split.zstd")
rows.append((
    "`kpack split` librocsparse (a host library and one `.kpack` archive per architecture, "
    "zstd level 3 per kernel)",
    ms(t("split.gfxkit")), f"`zstd -3 -T0` of `.hip_fatbin` {ms(t('split.zstd'))}",
    spread("split.gfxkit", "split.zstd"),
    "-", "-", mib(mem("split.gfxkit")), "<= 1.0x `zstd -3 -T0`", ok(r <= 1.0),
))

cpus = [
    cpu("dec.gfxkit", "dec.md5"),
    cpu("ext.gfxkit", "ext.cp"),
    cpu("cmp.gfxkit", "cmp.zstd") + f"; clang {cpu_t('cmp.clang') * 1000:,.0f} ms",
    cpu("prune.gfxkit", "prune.cp"),
    cpu("rec.gfxkit", "rec.zstd"),
    cpu("split.gfxkit", "split.zstd"),
]
# The rows of the newer inputs, when floor.sh had them: gfxkit's run, the floor's, what the
# row is, the floor's name, the goal's text, its ratio, and the memory bound.
def newer_row(g, f, what, floor, goal, limit, limit_mib=256):
    if g not in runs:
        return
    r = ratio(g, f)
    m = mem(g)
    rows.append((
        what, ms(t(g)), f"{floor} {ms(t(f))}", spread(g, f), "-", "-", mib(m),
        f"{goal}; <= {limit_mib} MiB", ok(r <= limit and m <= limit_mib * MiB),
    ))
    cpus.append(cpu(g, f))


if "cub.gfxkit" in runs:
    newer_row(
        "cub.gfxkit", "cub.cp",
        f"`extract` every entry of cupy-rocm-7-0's `cub` bundle uncompressed ({n['cub'] / 2**20:,.0f} MiB, "
        f"{n['cub_entries']} entries)",
        "`cp`", "<= 1.2x `cp`", 1.2,
    )
if "tree.gfxkit" in runs:
    newer_row(
        "tree.gfxkit", "tree.cp",
        "`prune --keep gfx90a` of a kernel-database tree: Debian's librocblas0 5.5.1, the library "
        f"and its Tensile library ({n['tree_before'] / 1e9:.2f} GB -> {n['tree_after'] / 1e9:.2f} GB)",
        "`cp -r` of the files kept", "<= 2x `cp -r`", 2,
    )
# Rows with a goal of their own and no floor: gfxkit's run, what it is, the goal in seconds and
# in MiB of peak anonymous memory.
def absolute_row(g, what, seconds, limit_mib):
    if g not in runs:
        return
    m = mem(g)
    rows.append((
        what, ms(t(g)), "-", "-", "-", "-", mib(m),
        f"<= {seconds} s; <= {limit_mib} MiB", ok(t(g) <= seconds and m <= limit_mib * MiB),
    ))
    cpus.append(f"{cpu_t(g) * 1000:,.0f} ms")


absolute_row(
    "tree.size",
    "`size` of that tree (every code object and bundle counted by architecture)", 2, 512,
)
absolute_row(
    "tree.doctor",
    "`doctor --device gfx90a` of that tree (the library judged with its database: the 117 MB "
    "index read and its files resolved)", 2, 512,
)
if "img.gfxkit" in runs:
    newer_row(
        "img.gfxkit", "img.tar",
        f"`list --summary` of an OCI image archive ({n['image'] / 1e6:,.0f} MB; a gzip layer with "
        "librocsparse and librocrand, a zstd layer with a whiteout)",
        "`tar -x` of the image and its layers", "<= 1x `tar -x`", 1,
    )
if "dll.gfxkit" in runs:
    newer_row(
        "dll.gfxkit", "dll.cp",
        "`prune --keep gfx90a` of a Windows DLL (400 kernels for gfx90a, gfx942, gfx1100 and "
        f"gfx1151 by clang-19 and lld-link-19; {n['dll'] / 1e6:.1f} MB -> {n['dll_pruned'] / 1e6:.1f} MB)",
        "`cp`", "<= 2x `cp`", 2,
    )
if "hbl.size" in runs:
    hbl = (
        f"Debian sid's hipBLASLt 7.1 `hipblaslt/library` ({n['hbl_bytes'] / 1e6:,.0f} MB, "
        f"{n['hbl_files']:,} files, {n['hbl_ccob']} of them CCOB shards)"
    )
    newer_row(
        "hbl.size", "hbl.cat",
        f"`size` of {hbl}: each compressed bundle read from its headers",
        "`cat` of every file", "<= 1.2x `cat`", 1.2, 64,
    )
    newer_row(
        "hbl.list", "hbl.cat2",
        "`list -r` of that directory (every Tensile index read and resolved against the "
        "directory)",
        "`cat` of every file", "<= 1.2x `cat`", 1.2,
    )
    newer_row(
        "hbl.check", "hbl.cat3",
        "`size --check` of that directory (every bundle decompressed, its hash checked)",
        "`cat` of every file", "none (decodes every bundle)", float("inf"), 1024,
    )
rows = [r[:4] + (c,) + r[4:] for r, c in zip(rows, cpus)]
stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
cores = int(kv["cores"])
# The load: the CPU other processes took during the run (the machine's busy time less the
# benchmark's own, from /proc/stat), as the cores they kept busy on average. Runs recorded
# before it was measured fall back on the load average at the start, which also counts work
# that ended in the minute before the run.
if "others_cpu" in kv and float(kv.get("elapsed", 0)) > 0:
    others = float(kv["others_cpu"]) / float(kv["elapsed"])
    loaded = others > 0.25
    load_said = (
        f"other processes took {float(kv['others_cpu']):.0f} CPU-seconds over the run's "
        f"{float(kv['elapsed']):.0f} s, {others:.2f} cores on average; load average "
        f"{kv['load']} at the start"
    )
else:
    loaded = float(kv["load"].split()[0]) > cores / 2
    load_said = f"load average {kv['load']} at the start"
if loaded:
    conditions = [
        f"Measured {stamp} on a {cores}-core machine **under load** from other processes",
        f"({load_said}; {kv.get('load_end', '?')} at the end, the",
        "benchmark's own included). Wall times then mostly measure the wait for a core, and work",
        "moved to a second thread (the MD5 hash) is paid in full, so a side's CPU time is the",
        "better measure of what it costs: under a load like this the wall ratios of two runs can",
        "differ by 2x while CPU ratios stay within about 10%. The goals are for wall time on an",
        "idle machine; read the `met` column with that in mind.",
    ]
else:
    conditions = [
        f"Measured {stamp} on an otherwise idle {cores}-core machine ({load_said};",
        f"{kv.get('load_end', '?')} at the end, the benchmark's own included).",
    ]
# How two processes at once compare with one (zstd -d of the frame, alone and two copies at
# the same time): 1.0 on two real cores; more when the cores share execution units.
if "par.one" in runs and "par.two" in runs:
    scale = ratio("par.two", "par.one")
    scaling = [
        "",
        f"Parallel scaling of this machine: two copies of `zstd -d` at once take {scale:.2f}x the",
        "time of one alone (1.00x on two independent cores; up to 2x on one shared core). Every",
        "goal that counts on work done beside other work (the hash beside the decoder, zstd's",
        "workers) is measured against that.",
    ]
else:
    scaling = []
md = [
    "# Performance",
    "",
    "gfxkit's heavy operations measured against their floor (`cp`, `zstd`) and, where clang has",
    "the same operation, `clang-offload-bundler` 19, on real bundles: Debian's `librocsparse.so`",
    "(ROCm 5.3, 1.3 GB, 111 bundles) and its largest bundle (93 MB, 8 entries); and, where",
    "they were at hand, a kernel-database tree (Debian's rocBLAS), a container image and a",
    "Windows DLL. Written by",
    "`bash bench/floor.sh`; every row is the median of the ratios of wall times of runs made side",
    "by side, with their range (min-max) in brackets (lower is better for gfxkit).",
    "",
    *conditions,
    "",
    "After a warm-up round, each row's commands ran alternately (gfxkit, floor, clang, gfxkit,",
    f"...), {kv['runs']} times each ({kv['big_runs']} for librocsparse"
    + (f", {kv['tree_runs']} for the tree and the image" if "tree_runs" in kv else "")
    + "); times are medians, and",
    "a ratio is taken within each round, then the median of the rounds' ratios is shown with",
    "their range. Memory is the peak anonymous memory (`RssAnon` of `/proc/<pid>/status`,",
    "sampled every millisecond); memory-mapped inputs and the page cache are not counted. CPU",
    "is user plus system time (median over the runs). Release build.",
    *([f"The whole run took {kv['minutes']} minutes."] if "minutes" in kv else []),
    *scaling,
    "",
    "![ratios](performance.svg)",
    "",
    "| operation | gfxkit | floor | vs floor | gfxkit CPU (vs floor's) | clang-19 | vs clang | gfxkit peak anon memory | goal | met |",
    "|---|---|---|---|---|---|---|---|---|---|",
]
for row in rows:
    md.append("| " + " | ".join(row) + " |")
md += [
    "",
    f"`gfxkit compress --threads 0` of clang's uncompressed bundle gives clang's compressed bundle",
    f"byte for byte: {kv['ident']}."
    + (
        f" With zstd's workers (`--threads 2`) it takes {t('cmpw.gfxkit') * 1000:,.0f} ms"
        f" ({ratio('cmpw.gfxkit', 'cmp.clang'):.2f}x clang's time), output {n['wz']:,} bytes."
        if "cmpw.gfxkit" in runs
        else ""
    ),
    "",
    "## What makes these figures",
    "",
    "- **Decompression** streams each compressed bundle into the output file in 256 KiB steps,",
    "  each written while it is still in the decoding core's cache; the CCOB hash (MD5, gfxkit's",
    "  own, see below) runs on a second thread over the steps the decoder has finished, so the",
    "  cost is about the longer of decoding and hashing, not their sum. Memory is zstd's window",
    "  (at most the bundle) plus 8 MiB of steps. A hash or size mismatch found at the end removes",
    "  the temporary output: a damaged bundle is never written. In memory (extracting entries, a",
    "  rewrite), a zstd frame is decoded in one call straight into its final buffer, which zstd",
    "  uses as its window: memory is the output once, and the hash follows the decoding.",
    "- **Extraction** copies each entry stored uncompressed from the input file into a temporary",
    "  file inside the kernel (`copy_file_range`: the bytes never pass through gfxkit's memory,",
    "  and a file system that shares extents shares them), then renames it into place; outputs",
    "  are not fsynced (see [durability](durability.md)). Decoded entries are written from memory.",
    "  Before a code object is written its identity is checked (ELF tables, notes, the metadata",
    "  walked as MessagePack for its version and target, which must agree with `e_flags` and the",
    "  entry ID) without decoding its kernels, which `inspect` and `verify` do: on this bundle",
    "  that check is about 10 ms of CPU, where decoding every kernel's metadata took 90 ms.",
    "  `extract --target` on a compressed bundle decodes only up to the last wanted entry and says",
    "  that the hash was not checked; `gfxkit verify` always checks it.",
    "- **Compression** hashes on a second thread while zstd compresses. On a machine of fewer",
    "  than 4 cores, such as this one, zstd compresses on one thread by default, exactly as clang",
    "  does (same bytes, with Debian's libzstd; `--threads 0` asks for that anywhere): the row",
    "  above. From 4 cores, and with `--threads N`, zstd's workers keep long-distance matching",
    "  and the one-thread window (the bundle, up to 128 MiB); gfxkit sets 32 MiB jobs overlapping",
    "  by 8 MiB and, at levels up to 3, larger hash and chain tables than level 3's own (2^20 and",
    "  2^18 entries), which makes the output smaller than clang's single-threaded frame at about",
    "  2.6 times the CPU time of one thread: the `--threads 2` line below.",
    "- **prune / recompress** plan the new file and stream it: kept runs of the input of 64 KiB",
    "  and more are copied from the input file inside the kernel, new bundle headers, compressed",
    "  bundles and patched fields (program and",
    "  section headers, relocation addends, symbols, wrapper pointers) are the only bytes held.",
    "  Bundles are rewritten in parallel, one per core; a file of many bundles compresses each on",
    "  one thread (clang's bytes for each); a lone bundle is compressed as `gfxkit compress` does",
    "  by default. The CCOB hashes of",
    "  the bundles compressed whole are computed first, all at once: eight bundles per thread side",
    "  by side in SIMD lanes (`gfxkit_bundle::hash`, about four times the throughput of one MD5",
    "  stream per thread), so that compression then has the cores to itself; a compressed bundle",
    "  kept whole keeps its hash, checked when it was decoded. (A bundle rewritten with entries",
    "  dropped is hashed on a second thread while it is compressed.) The written file is read back and verified before it is renamed",
    "  into place: every bundle is decoded (sizes checked) and every kept entry compared byte for",
    "  byte with the input mapping, which needs no hashing. The entries' MD5 digests are computed",
    "  only for `--json`.",
    "",
    "## Where the rest goes",
    "",
    "- `decompress`: the CCOB hash is an MD5 of the whole bundle, and one MD5 stream cannot go",
    "  faster than its chain of 64 dependent steps per 64-byte block. gfxkit's MD5",
    "  (`gfxkit_bundle::hash::Md5`) keeps everything that does not depend on the previous step off",
    "  that chain. `bash bench/md5.sh` times it beside the Rust implementations: it runs as fast",
    "  as `md5-asm` (the assembly behind `md-5`'s `asm` feature, in maintenance only and dropped",
    "  from `md-5`'s next release) and OpenSSL's, and about 1.3 times as fast as `md-5` itself,",
    "  the fastest well-kept crate; `md-5` stays the tests' reference. The hash costs about as",
    "  much CPU as `zstd -d` spends on everything (zstd's own frame checksum, xxHash, is nearly",
    "  free; clang does not write it). On an idle machine the hash runs beside the decoder and is the longer",
    "  of the two, slowed by the decoder beside it as the scaling line shows; under load both",
    "  threads wait for a core and the sum is paid.",
    "- `recompress`: on top of zstd compressing each bundle (on one thread each, for clang's",
    "  bytes), the CCOB hash of every new bundle (MD5 over the 1.3 GB: about 0.6 s of CPU side by",
    "  side, 2.4 s as one stream per bundle) and the read-back check (decoding the 143 MB of new",
    "  bundles back to 1.3 GB and comparing) are work `zstd -T0` over the dumped section does",
    "  not do. Memory is the compressed bundles held until they are written plus, during the",
    "  read-back check, one decompressed bundle per core.",
    "- `list -r` of hipBLASLt's library directory: a little under half of its CPU is reading the",
    "  429 MB of Tensile indexes as a check, not a skim: every solution map is stepped over to its",
    "  `index`, and every entry of every matching table (3.8 million) is read and checked to name",
    "  a solution of the index, so that a damaged index is an error, not a short listing. Two",
    "  exact shortcuts make that about 5 GB/s per core: a table entry is read by one comparison",
    "  of its bytes with the layout of an entry before it (`gfxkit_msgpack::Shape`: markers,",
    "  counts and keys, not the numbers; a table's entries take a handful of layouts in turn),",
    "  and a solution's `problemPredicate`, some 200 values that differ from the last solution's",
    "  in a few numbers, is jumped through where its bytes equal that one's and walked where they",
    "  differ (`Reader::skip_like`, used for a field only while it pays: rocBLAS 5.5's smaller",
    "  maps are walked). The rest is the standalone code objects' metadata, one zstd context per",
    "  compressed bundle and the kernel's mapping of the files; each file is opened once and the",
    "  text is written in large blocks.",
    "- `kpack split`: its CPU is zstd's (libzstd is nearly nine tenths of the samples; the rest",
    "  reads the bundles and checks each kernel's identity). The row splits into a fresh layout,",
    "  as zstd's side writes a fresh file. A split over the archives of an earlier one costs more:",
    "  each archive is merged with the one there, and renaming it over the old one makes ext4",
    "  allocate its 30 MB there and then (about 11 ms an archive, one after the other); before",
    "  2026-12-07 the row measured that, by leaving the archives of each round for the next.",
    "- `compress` with zstd's workers: they split the bundle into jobs, and each job's ordinary",
    "  match finder sees only its own job and the overlap before it; to come out no larger than",
    "  clang's one frame they need larger tables, which cost more CPU than two cores give back",
    "  here (two threads never run at twice the speed of one on this machine: see the scaling",
    "  line above). Hence the one-thread default below 4 cores.",
]
open(f"{docs}/performance.md", "w").write("\n".join(md) + "\n")

# The chart: per row, gfxkit's time as a ratio of the floor (and of clang), goal marked.
bars = [
    ("decompress vs zstd -d | md5sum", pairs("dec.gfxkit", "dec.md5"), 1.3),
    ("extract vs cp", pairs("ext.gfxkit", "ext.cp"), 1.2),
    ("extract vs clang", pairs("ext.gfxkit", "ext.clang"), None),
    ("compress vs clang", pairs("cmp.gfxkit", "cmp.clang"), 0.6),
    ("compress vs zstd -T0", pairs("cmp.gfxkit", "cmp.zstd"), None),
    ("prune vs cp", pairs("prune.gfxkit", "prune.cp"), 2.0),
    ("recompress vs zstd -T0", pairs("rec.gfxkit", "rec.zstd"), 1.2),
    ("kpack split vs zstd -T0", pairs("split.gfxkit", "split.zstd"), 1.0),
    *([("extract cub vs cp", pairs("cub.gfxkit", "cub.cp"), 1.2)] if "cub.gfxkit" in runs else []),
    *([("prune tree vs cp -r", pairs("tree.gfxkit", "tree.cp"), 2.0)] if "tree.gfxkit" in runs else []),
    *([("image list vs tar -x", pairs("img.gfxkit", "img.tar"), 1.0)] if "img.gfxkit" in runs else []),
    *([("prune DLL vs cp", pairs("dll.gfxkit", "dll.cp"), 2.0)] if "dll.gfxkit" in runs else []),
    *([("size hipBLASLt vs cat", pairs("hbl.size", "hbl.cat"), 1.2)] if "hbl.size" in runs else []),
    *([("list -r hipBLASLt vs cat", pairs("hbl.list", "hbl.cat2"), 1.2)] if "hbl.list" in runs else []),
]
W, left, bh, gap = 640, 190, 22, 10
top = 34
H = top + len(bars) * (bh + gap) + 30
xmax = max(3.0, max(max(b[1][2], b[2] or 0) for b in bars) * 1.1)
sx = (W - left - 20) / xmax
svg = [
    f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
    f'<rect width="{W}" height="{H}" fill="white"/>',
    f'<text x="{left}" y="18" font-weight="bold">gfxkit time / reference time, median and range (lower is better; | = goal)</text>',
]
for k in range(int(xmax) + 1):
    x = left + k * sx
    svg.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{H - 24}" stroke="#ddd"/>')
    svg.append(f'<text x="{x:.1f}" y="{H - 10}" text-anchor="middle">{k}x</text>')
for i, (label, (ratio, lo, hi), goal) in enumerate(bars):
    y = top + i * (bh + gap)
    met = goal is None or ratio <= goal
    color = "#4a7ebb" if met else "#c0504d"
    svg.append(f'<text x="{left - 8}" y="{y + bh * 0.7:.1f}" text-anchor="end">{label}</text>')
    svg.append(f'<rect x="{left}" y="{y}" width="{max(ratio * sx, 1):.1f}" height="{bh}" fill="{color}"/>')
    # The spread: a whisker from the least to the greatest ratio of the rounds.
    svg.append(f'<line x1="{left + lo * sx:.1f}" y1="{y + bh / 2:.1f}" x2="{left + hi * sx:.1f}" y2="{y + bh / 2:.1f}" stroke="#333"/>')
    svg.append(f'<text x="{left + max(ratio, hi) * sx + 4:.1f}" y="{y + bh * 0.7:.1f}">{ratio:.2f}x</text>')
    if goal is not None:
        gx = left + goal * sx
        svg.append(f'<line x1="{gx:.1f}" y1="{y - 3}" x2="{gx:.1f}" y2="{y + bh + 3}" stroke="black" stroke-width="2"/>')
svg.append("</svg>")
open(f"{docs}/performance.svg", "w").write("\n".join(svg) + "\n")
