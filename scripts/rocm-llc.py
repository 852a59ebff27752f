#!/usr/bin/env python3
"""A minimal llc over ROCm's LLVM 22 (rocm-llvm-python's librocmllvm.so), through the LLVM C API.

    rocm-llc.py [-O0|-O1|-O2|-O3] -mtriple=T -mcpu=CPU [-mattr=A,B] [-amdgcn-...] \
        [--mir-after-legalizer FILE] IN.ll -o OUT.s

Parses IN.ll, builds a target machine and writes its assembly to OUT.s. Arguments that start
with a single dash and are not -O/-mtriple/-mcpu/-mattr/-o are backend options, handed to
LLVMParseCommandLineOptions (so `-amdgcn-skip-cache-invalidations` works as with llc).
With --mir-after-legalizer, the machine code as the memory legalizer leaves it (LLVM's
-print-after=si-memory-legalizer) is written to FILE; LLVM's own diagnostics land there too,
so when the process dies inside LLVM, FILE holds the reason. A processor LLVM does not
recognize is an error (LLVM itself only warns). Exit status 0 on success, non-zero with the reason on
stderr (or in FILE) otherwise.

    rocm-llc.py --serve

reads one job a line on stdin (the arguments above, tab-separated) and answers each with a
line holding the exit status. The library is loaded once; each job runs in a forked child, so
a job that dies inside LLVM (LLVM exits on a selection failure) costs only that job.

The library is found through $GFXKIT_ROCM_LLVM_SO, else in the venv that scripts/ensure-llvm22
creates (target/llvm22/venv).
"""
import ctypes
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def find_library():
    path = os.environ.get("GFXKIT_ROCM_LLVM_SO")
    if path:
        return path
    pattern = os.path.join(HERE, "..", "target", "llvm22", "venv", "lib", "python3*",
                           "site-packages", "rocm", "llvm", "librocmllvm.so")
    found = sorted(glob.glob(pattern))
    if not found:
        sys.exit("rocm-llc: librocmllvm.so not found; run scripts/ensure-llvm22")
    return found[-1]


def load(path):
    lib = ctypes.CDLL(path)
    c_p = ctypes.c_void_p
    c_s = ctypes.c_char_p
    sig = {
        "LLVMContextCreate": (c_p, []),
        "LLVMCreateMemoryBufferWithMemoryRangeCopy": (c_p, [c_s, ctypes.c_size_t, c_s]),
        "LLVMParseIRInContext": (ctypes.c_int, [c_p, c_p, ctypes.POINTER(c_p), ctypes.POINTER(c_p)]),
        "LLVMGetTargetFromTriple": (ctypes.c_int, [c_s, ctypes.POINTER(c_p), ctypes.POINTER(c_p)]),
        "LLVMCreateTargetMachine": (c_p, [c_p, c_s, c_s, c_s, ctypes.c_int, ctypes.c_int, ctypes.c_int]),
        "LLVMTargetMachineEmitToMemoryBuffer": (
            ctypes.c_int, [c_p, c_p, ctypes.c_int, ctypes.POINTER(c_p), ctypes.POINTER(c_p)]),
        "LLVMGetBufferStart": (c_p, [c_p]),
        "LLVMGetBufferSize": (ctypes.c_size_t, [c_p]),
        "LLVMParseCommandLineOptions": (None, [ctypes.c_int, ctypes.POINTER(c_s), c_s]),
        "LLVMDisposeMessage": (None, [c_p]),
        "LLVMContextSetDiagnosticHandler": (None, [c_p, c_p, c_p]),
        "LLVMGetDiagInfoDescription": (c_p, [c_p]),
        "LLVMGetDiagInfoSeverity": (ctypes.c_int, [c_p]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    for init in ("TargetInfo", "Target", "TargetMC", "AsmPrinter", "AsmParser"):
        getattr(lib, "LLVMInitializeAMDGPU" + init)()
    return lib


DIAGNOSTIC_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


def message(ptr):
    return ctypes.string_at(ptr).decode(errors="replace") if ptr else ""


def serve():
    lib = load(find_library())
    for line in sys.stdin:
        args = line.rstrip("\n").split("\t")
        pid = os.fork()
        if pid == 0:
            try:
                code = compile_with(lib, args)
            except BaseException as e:  # a job's failure is its exit status
                sys.stderr.write(f"rocm-llc: error: {e}\n")
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code if isinstance(code, int) else 1)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        sys.stdout.write(f"{code}\n")
        sys.stdout.flush()
    return 0


def main(argv):
    if argv == ["--serve"]:
        return serve()
    return compile_with(None, argv)


def compile_with(lib, argv):
    opt, triple, cpu, attrs, out, mir, src = 2, None, "", "", None, None, None
    backend = []
    it = iter(argv)
    for a in it:
        if a in ("-O0", "-O1", "-O2", "-O3"):
            opt = int(a[2])
        elif a.startswith("-mtriple="):
            triple = a.split("=", 1)[1]
        elif a.startswith("-mcpu="):
            cpu = a.split("=", 1)[1]
        elif a.startswith("-mattr="):
            attrs = a.split("=", 1)[1]
        elif a == "-o":
            out = next(it, None)
        elif a == "--mir-after-legalizer":
            mir = next(it, None)
        elif a.startswith("-") and a != "-":
            backend.append(a)
        else:
            src = a
    if not (triple and src and out):
        sys.exit("usage: rocm-llc.py -mtriple=T -mcpu=CPU [-mattr=A] [opts] IN.ll -o OUT.s")
    with open(src, "rb") as f:
        ir = f.read()
    if lib is None:
        lib = load(find_library())
    # LLVM prints -print-after dumps and diagnostics on file descriptor 2: into the log (the
    # MIR file, or a file beside the output), read back for unknown-processor warnings.
    log = mir or out + ".log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(fd, 2)
    os.close(fd)
    if mir:
        backend.append("-print-after=si-memory-legalizer")
    opts = [b"rocm-llc"] + [b.encode() for b in backend]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    lib.LLVMParseCommandLineOptions(len(opts), arr, None)
    ctx = lib.LLVMContextCreate()
    # Error diagnostics (an unsupported atomic, say) are collected rather than ending the
    # process, so one run names every function they concern; selection failures still end it.
    errors = []

    def on_diagnostic(info, _data):
        text = message(lib.LLVMGetDiagInfoDescription(info))
        # LLVMDSError = 0, LLVMDSWarning = 1.
        severity = lib.LLVMGetDiagInfoSeverity(info)
        if severity == 0:
            errors.append(text)
        elif severity == 1:
            os.write(2, f"warning: {text}\n".encode())

    handler = DIAGNOSTIC_HANDLER(on_diagnostic)
    lib.LLVMContextSetDiagnosticHandler(ctx, ctypes.cast(handler, ctypes.c_void_p), None)
    buf = lib.LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, len(ir), src.encode())
    mod = ctypes.c_void_p()
    err = ctypes.c_void_p()
    if lib.LLVMParseIRInContext(ctx, buf, ctypes.byref(mod), ctypes.byref(err)):
        sys.stderr.write(f"rocm-llc: error: {src}: {message(err)}\n")
        return 1
    target = ctypes.c_void_p()
    if lib.LLVMGetTargetFromTriple(triple.encode(), ctypes.byref(target), ctypes.byref(err)):
        sys.stderr.write(f"rocm-llc: error: {message(err)}\n")
        return 1
    # LLVMRelocDefault = 0, LLVMCodeModelDefault = 0; the opt level maps one to one.
    tm = lib.LLVMCreateTargetMachine(target, triple.encode(), cpu.encode(), attrs.encode(), opt, 0, 0)
    if not tm:
        sys.stderr.write(f"rocm-llc: error: cannot create a target machine for {triple} {cpu}\n")
        return 1
    out_buf = ctypes.c_void_p()
    # LLVMAssemblyFile = 0.
    failed = lib.LLVMTargetMachineEmitToMemoryBuffer(tm, mod, 0, ctypes.byref(err), ctypes.byref(out_buf))
    sys.stderr.flush()
    os.dup2(saved, 2)
    os.close(saved)
    with open(log, errors="replace") as f:
        unknown = [l for l in f if "is not a recognized" in l]
    if not mir:
        os.remove(log)
    if unknown:
        sys.stderr.write(f"rocm-llc: error: {unknown[0].strip()}\n")
        return 1
    if errors:
        with open(log, "a") as f:
            for e in errors:
                f.write(f"error: {e}\n")
        sys.stderr.write(f"rocm-llc: error: {errors[0]}\n")
        return 1
    if failed:
        sys.stderr.write(f"rocm-llc: error: {message(err)}\n")
        return 1
    data = ctypes.string_at(lib.LLVMGetBufferStart(out_buf), lib.LLVMGetBufferSize(out_buf))
    tmp = out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
