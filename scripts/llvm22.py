#!/usr/bin/env python3
"""LLVM 22 as an oracle: compile LLVM IR for AMDGPU with AMD's ROCm LLVM 22 build.

gfxkit is conformance-tested against Debian's LLVM 19 tools. ROCm 7.x ships LLVM 22; its
`librocmllvm.so` (from the PyPI wheel rocm-llvm-python) exports LLVM's C API, which this script
drives through ctypes: no compiler binary, no build step.

Subcommands:
  install               download the wheel (pip download, no dependencies) and extract
                        librocmllvm.so into the cache directory; does nothing when present
  path                  print the path of librocmllvm.so (installing it first)
  version               print the LLVM version of the library
  cpus                  list the processors the library knows for a triple, one a line
  obj IR -o OUT         compile IR (a file, or - for stdin) to a code object (relocatable ELF)
  asm IR -o OUT         compile IR to AMDGPU assembly text
  batch                 compile many inputs in one process: reads JSON lines from stdin,
                        {"ir": TEXT, "cpu": NAME, "features": "", "triple": "", "opt": 2,
                        "kind": "asm"|"obj", "output": PATH}, writes one JSON line each,
                        {"ok": true, "asm": TEXT} or {"ok": true, "obj": BASE64} (with
                        "output", the bytes go to that file: {"ok": true, "output": PATH}),
                        or {"ok": false, "error": TEXT}; --option applies to the whole batch

obj and asm options: --cpu NAME (required), --features +xnack,-sramecc, --triple
(default amdgcn-amd-amdhsa), -O 0..3 (default 2), --option ARG (an LLVM command-line option
such as --amdhsa-code-object-version=6 or -amdgcn-skip-cache-invalidations; repeatable).
Options are parsed once per process, as `llc` does.

The cache directory is $GFXKIT_LLVM22_DIR, else target/llvm22 in the gfxkit checkout.
Exit status: 0 success, 1 compile error (message on stderr), 2 usage or install error.
LLVM aborts the process on a fatal backend error (for batch too): callers see it die.

The script is also a module: `Llvm(install())` gives `compile()`, `cpus()`, `version()`.

Examples:
  scripts/llvm22.py obj k.ll --cpu gfx950 --option=--amdhsa-code-object-version=6 -o k.o
  echo 'define amdgpu_kernel void @k() { ret void }' | scripts/llvm22.py asm - --cpu gfx1250 -O0 -o -
"""

import argparse
import base64
import ctypes
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import zipfile

WHEEL = "rocm-llvm-python"
WHEEL_VERSION = "7.2.2.562.46"
LIB_IN_WHEEL = "rocm/llvm/librocmllvm.so"
LIB_NAME = "librocmllvm.so"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Fail(Exception):
    """An error reported as one line on stderr; `code` is the exit status."""

    def __init__(self, msg, code=1):
        super().__init__(msg)
        self.code = code


def cache_dir():
    return os.environ.get("GFXKIT_LLVM22_DIR") or os.path.join(REPO, "target", "llvm22")


def lib_path():
    return os.path.join(cache_dir(), LIB_NAME)


def install(quiet=False):
    """Puts librocmllvm.so into the cache directory; returns its path."""
    lib = lib_path()
    if os.path.isfile(lib):
        return lib
    d = cache_dir()
    os.makedirs(d, exist_ok=True)
    # Tests run in parallel processes: one installs, the others wait for it.
    with open(os.path.join(d, ".install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isfile(lib):
            return lib
        return install_locked(d, lib, quiet)


def install_locked(d, lib, quiet):
    wheels = os.path.join(d, "wheel")
    os.makedirs(wheels, exist_ok=True)
    if not quiet:
        print(f"llvm22: downloading {WHEEL}=={WHEEL_VERSION} into {wheels}", file=sys.stderr)
    # The wheel is tagged cp311; only its C++ library is used, so ask for that tag whatever
    # Python runs this script.
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64",
        "-d", wheels, f"{WHEEL}=={WHEEL_VERSION}",
    ]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise Fail(f"llvm22: pip download failed:\n{r.stdout}", 2)
    names = [n for n in os.listdir(wheels) if n.startswith("rocm_llvm_python-" + WHEEL_VERSION)]
    if not names:
        raise Fail(f"llvm22: no {WHEEL} {WHEEL_VERSION} wheel in {wheels}", 2)
    with zipfile.ZipFile(os.path.join(wheels, sorted(names)[0])) as z:
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".librocmllvm.")
        with os.fdopen(fd, "wb") as out, z.open(LIB_IN_WHEEL) as src:
            while True:
                block = src.read(1 << 20)
                if not block:
                    break
                out.write(block)
    os.chmod(tmp, 0o755)
    os.replace(tmp, lib)
    # Only the library is needed; the wheel is 62 MB.
    for n in names:
        os.remove(os.path.join(wheels, n))
    return lib


class Llvm:
    """The parts of LLVM's C API the oracle needs, bound with ctypes."""

    def __init__(self, path):
        self.lib = L = ctypes.CDLL(path)
        vp, cp, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
        pcp = ctypes.POINTER(ctypes.c_char_p)
        sigs = {
            "LLVMGetTargetFromTriple": (i, [cp, ctypes.POINTER(vp), pcp]),
            "LLVMCreateTargetMachine": (vp, [vp, cp, cp, cp, i, i, i]),
            "LLVMDisposeTargetMachine": (None, [vp]),
            "LLVMContextCreate": (vp, []),
            "LLVMContextDispose": (None, [vp]),
            "LLVMCreateMemoryBufferWithMemoryRangeCopy": (vp, [cp, ctypes.c_size_t, cp]),
            "LLVMParseIRInContext": (i, [vp, vp, ctypes.POINTER(vp), pcp]),
            "LLVMSetTarget": (None, [vp, cp]),
            "LLVMTargetMachineEmitToMemoryBuffer": (i, [vp, vp, i, pcp, ctypes.POINTER(vp)]),
            "LLVMGetBufferStart": (ctypes.POINTER(ctypes.c_char), [vp]),
            "LLVMGetBufferSize": (ctypes.c_size_t, [vp]),
            "LLVMDisposeMemoryBuffer": (None, [vp]),
            "LLVMDisposeModule": (None, [vp]),
            "LLVMDisposeMessage": (None, [ctypes.c_void_p]),
            "LLVMParseCommandLineOptions": (None, [i, ctypes.POINTER(cp), cp]),
            "LLVMGetVersion": (None, [ctypes.POINTER(ctypes.c_uint)] * 3),
        }
        for name, (res, args) in sigs.items():
            f = getattr(L, name)
            f.restype, f.argtypes = res, args
        for part in ("TargetInfo", "Target", "TargetMC", "AsmPrinter", "AsmParser"):
            getattr(L, "LLVMInitializeAMDGPU" + part)()

    def version(self):
        v = [ctypes.c_uint() for _ in range(3)]
        self.lib.LLVMGetVersion(*[ctypes.byref(x) for x in v])
        return ".".join(str(x.value) for x in v)

    def options(self, args):
        if not args:
            return
        argv = [b"llvm22"] + [a.encode() for a in args]
        arr = (ctypes.c_char_p * len(argv))(*argv)
        self.lib.LLVMParseCommandLineOptions(len(argv), arr, None)

    def target(self, triple):
        t, err = ctypes.c_void_p(), ctypes.c_char_p()
        if self.lib.LLVMGetTargetFromTriple(triple.encode(), ctypes.byref(t), ctypes.byref(err)):
            raise Fail(f"llvm22: triple {triple}: {err.value.decode(errors='replace')}")
        return t

    def cpus(self, triple):
        """The processor names LLVM lists for `-mcpu=help` (printed on stderr)."""
        t = self.target(triple)
        text = capture_stderr(
            lambda: self.lib.LLVMDisposeTargetMachine(
                self.lib.LLVMCreateTargetMachine(t, triple.encode(), b"help", b"", 2, 0, 0)
            )
        )
        cpus, inside = [], False
        for line in text.splitlines():
            if line.startswith("Available CPUs"):
                inside = True
            elif line.startswith("Available features"):
                break
            elif inside and " - " in line:
                cpus.append(line.split(" - ")[0].strip())
        if not cpus:
            raise Fail(f"llvm22: no processor list in -mcpu=help output:\n{text}")
        return cpus

    def compile(self, ir, triple, cpu, features, opt, filetype):
        """Compiles IR text; `filetype` 0 = assembly, 1 = object. Returns bytes."""
        L = self.lib
        t = self.target(triple)
        tm = L.LLVMCreateTargetMachine(t, triple.encode(), cpu.encode(), features.encode(), opt, 0, 0)
        if not tm:
            raise Fail(f"llvm22: cannot create a target machine for {triple} {cpu}")
        ctx = L.LLVMContextCreate()
        try:
            buf = L.LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, len(ir), b"input")
            mod, err = ctypes.c_void_p(), ctypes.c_char_p()
            # LLVMParseIRInContext takes ownership of the buffer.
            if L.LLVMParseIRInContext(ctx, buf, ctypes.byref(mod), ctypes.byref(err)):
                raise Fail(f"llvm22: cannot parse IR: {err.value.decode(errors='replace')}")
            L.LLVMSetTarget(mod, triple.encode())
            out = ctypes.c_void_p()
            if L.LLVMTargetMachineEmitToMemoryBuffer(tm, mod, filetype, ctypes.byref(err), ctypes.byref(out)):
                L.LLVMDisposeModule(mod)
                raise Fail(f"llvm22: {cpu}: {err.value.decode(errors='replace')}")
            data = ctypes.string_at(L.LLVMGetBufferStart(out), L.LLVMGetBufferSize(out))
            L.LLVMDisposeMemoryBuffer(out)
            L.LLVMDisposeModule(mod)
            return data
        finally:
            L.LLVMContextDispose(ctx)
            L.LLVMDisposeTargetMachine(tm)


def capture_stderr(fn):
    """Runs fn() with file descriptor 2 sent to a temporary file; returns what was written."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        return tmp.read().decode(errors="replace")


def write_out(path, data):
    if path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".llvm22.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def batch(llvm, options):
    llvm.options(options)
    known = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            job = json.loads(line)
            triple = job.get("triple") or "amdgcn-amd-amdhsa"
            if triple not in known:
                known[triple] = set(llvm.cpus(triple))
            cpu = job["cpu"]
            if cpu not in known[triple]:
                raise Fail(f"llvm22: LLVM {llvm.version()} does not know processor {cpu}")
            kind = job.get("kind", "asm")
            if kind not in ("asm", "obj"):
                raise Fail(f"llvm22: kind must be asm or obj, not {kind}")
            data = llvm.compile(
                job["ir"].encode(), triple, cpu, job.get("features", ""),
                int(job.get("opt", 2)), 1 if kind == "obj" else 0,
            )
            if job.get("output"):
                write_out(job["output"], data)
                out = {"ok": True, "output": job["output"]}
            elif kind == "obj":
                out = {"ok": True, "obj": base64.b64encode(data).decode()}
            else:
                out = {"ok": True, "asm": data.decode()}
        except (Fail, KeyError, ValueError, TypeError, OSError) as e:
            out = {"ok": False, "error": str(e)}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


def main(argv):
    ap = argparse.ArgumentParser(
        prog="llvm22.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("install")
    sub.add_parser("path")
    sub.add_parser("version")
    c = sub.add_parser("cpus")
    c.add_argument("--triple", default="amdgcn-amd-amdhsa")
    for name in ("obj", "asm"):
        p = sub.add_parser(name)
        p.add_argument("input", help="LLVM IR text file, or - for stdin")
        p.add_argument("-o", "--output", required=True, help="output file, or - for stdout")
        p.add_argument("--cpu", required=True)
        p.add_argument("--features", default="", help="comma-separated, such as +xnack,-sramecc")
        p.add_argument("--triple", default="amdgcn-amd-amdhsa")
        p.add_argument("-O", dest="opt", type=int, choices=range(4), default=2)
        p.add_argument("--option", action="append", default=[], help="an LLVM command-line option")
    b = sub.add_parser("batch")
    b.add_argument("--option", action="append", default=[], help="an LLVM command-line option")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "install":
            print(install())
            return 0
        lib = install(quiet=a.cmd != "path")
        if a.cmd == "path":
            print(lib)
            return 0
        llvm = Llvm(lib)
        if a.cmd == "version":
            print(llvm.version())
        elif a.cmd == "cpus":
            print("\n".join(llvm.cpus(a.triple)))
        elif a.cmd == "batch":
            batch(llvm, a.option)
        else:
            # An unknown processor makes LLVM warn and compile for "generic"; refuse instead.
            if a.cpu not in llvm.cpus(a.triple):
                raise Fail(f"llvm22: LLVM {llvm.version()} does not know processor {a.cpu}")
            llvm.options(a.option)
            ir = sys.stdin.buffer.read() if a.input == "-" else open(a.input, "rb").read()
            data = llvm.compile(ir, a.triple, a.cpu, a.features, a.opt, 1 if a.cmd == "obj" else 0)
            write_out(a.output, data)
        return 0
    except Fail as e:
        print(str(e), file=sys.stderr)
        return e.code
    except OSError as e:
        print(f"llvm22: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
