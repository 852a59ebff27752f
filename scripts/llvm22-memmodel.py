#!/usr/bin/env python3
"""The memory-model oracle on ROCm's LLVM 22: llc-like compiles that also dump the machine code
as the memory legalizer leaves it.

    llvm22-memmodel.py [-O0..-O3] -mtriple=T -mcpu=CPU [-mattr=A,B] [-amdgcn-...] \
        [--mir-after-legalizer FILE] IN.ll -o OUT.s
    llvm22-memmodel.py --serve

The first form compiles IN.ll to assembly, taking llc's arguments (the memory-model
configurations' `llc_args`); other single-dash arguments are LLVM options
(-amdgcn-skip-cache-invalidations). With --mir-after-legalizer, LLVM's
-print-after=si-memory-legalizer dump and its diagnostics go to FILE: the C API cannot resume
a pipeline from machine code as llc -start-after can, so the legalizer's own waits are read
from there. Error diagnostics (an unsupported atomic) are collected and written to FILE as
`error: ...` lines, naming every function they concern, and the exit status is 1; a selection
failure ends the process inside LLVM (the reason is in FILE too). An unknown processor is an
error.

--serve reads one job a line on stdin (the first form's arguments, tab-separated) and answers
each with a line holding its exit status; the library is loaded once and each job runs in a
forked child, so a job that LLVM ends costs only that job.

The library comes from scripts/llvm22.py (installed into target/llvm22 when missing).
"""
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llvm22  # noqa: E402

DIAGNOSTIC_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


def load():
    llvm = llvm22.Llvm(llvm22.install(quiet=True))
    L = llvm.lib
    for name, (res, args) in {
        "LLVMContextSetDiagnosticHandler": (None, [ctypes.c_void_p] * 3),
        "LLVMGetDiagInfoDescription": (ctypes.c_void_p, [ctypes.c_void_p]),
        "LLVMGetDiagInfoSeverity": (ctypes.c_int, [ctypes.c_void_p]),
    }.items():
        f = getattr(L, name)
        f.restype, f.argtypes = res, args
    return llvm


def text_of(ptr):
    return ctypes.string_at(ptr).decode(errors="replace") if ptr else ""


def parse_args(argv):
    job = {"opt": 2, "triple": None, "cpu": "", "attrs": "", "out": None, "mir": None,
           "src": None, "options": []}
    it = iter(argv)
    for a in it:
        if a in ("-O0", "-O1", "-O2", "-O3"):
            job["opt"] = int(a[2])
        elif a.startswith("-mtriple="):
            job["triple"] = a.split("=", 1)[1]
        elif a.startswith("-mcpu="):
            job["cpu"] = a.split("=", 1)[1]
        elif a.startswith("-mattr="):
            job["attrs"] = a.split("=", 1)[1]
        elif a == "-o":
            job["out"] = next(it, None)
        elif a == "--mir-after-legalizer":
            job["mir"] = next(it, None)
        elif a.startswith("-") and a != "-":
            job["options"].append(a)
        else:
            job["src"] = a
    if not (job["triple"] and job["src"] and job["out"]):
        raise llvm22.Fail("usage: llvm22-memmodel.py -mtriple=T -mcpu=CPU [opts] IN.ll -o OUT.s", 2)
    return job


def compile_job(llvm, argv):
    """One compile in this process (options are parsed once per process, as llc does)."""
    job = parse_args(argv)
    L = llvm.lib
    with open(job["src"], "rb") as f:
        ir = f.read()
    log = job["mir"] or job["out"] + ".log"
    options = list(job["options"])
    if job["mir"]:
        options.append("-print-after=si-memory-legalizer")
    errors = []

    def on_diagnostic(info, _data):
        msg = text_of(L.LLVMGetDiagInfoDescription(info))
        # LLVMDSError = 0, LLVMDSWarning = 1.
        severity = L.LLVMGetDiagInfoSeverity(info)
        if severity == 0:
            errors.append(msg)
        elif severity == 1:
            os.write(2, f"warning: {msg}\n".encode())

    handler = DIAGNOSTIC_HANDLER(on_diagnostic)
    # LLVM writes the dump and its diagnostics to file descriptor 2: into the log.
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        llvm.options(options)
        t = llvm.target(job["triple"])
        tm = L.LLVMCreateTargetMachine(t, job["triple"].encode(), job["cpu"].encode(),
                                       job["attrs"].encode(), job["opt"], 0, 0)
        if not tm:
            raise llvm22.Fail(f"cannot create a target machine for {job['triple']} {job['cpu']}")
        ctx = L.LLVMContextCreate()
        L.LLVMContextSetDiagnosticHandler(ctx, ctypes.cast(handler, ctypes.c_void_p), None)
        buf = L.LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, len(ir), job["src"].encode())
        mod, err = ctypes.c_void_p(), ctypes.c_char_p()
        if L.LLVMParseIRInContext(ctx, buf, ctypes.byref(mod), ctypes.byref(err)):
            raise llvm22.Fail(f"{job['src']}: {err.value.decode(errors='replace')}")
        out = ctypes.c_void_p()
        # LLVMAssemblyFile = 0.
        failed = L.LLVMTargetMachineEmitToMemoryBuffer(tm, mod, 0, ctypes.byref(err), ctypes.byref(out))
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
    with open(log, errors="replace") as f:
        unknown = [line.strip() for line in f if "is not a recognized" in line]
    with open(log, "a") as f:
        for e in unknown + errors:
            f.write(f"error: {e}\n")
    if not job["mir"]:
        os.remove(log)
    if unknown or errors:
        return 1
    if failed:
        raise llvm22.Fail(err.value.decode(errors="replace"))
    data = ctypes.string_at(L.LLVMGetBufferStart(out), L.LLVMGetBufferSize(out))
    llvm22.write_out(job["out"], data)
    return 0


def serve():
    llvm = load()
    for line in sys.stdin:
        args = line.rstrip("\n").split("\t")
        pid = os.fork()
        if pid == 0:
            try:
                code = compile_job(llvm, args)
            except llvm22.Fail as e:
                sys.stderr.write(f"llvm22-memmodel: {e}\n")
                code = e.code
            except BaseException as e:  # a job's failure is its exit status
                sys.stderr.write(f"llvm22-memmodel: {e}\n")
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        sys.stdout.write(f"{os.waitstatus_to_exitcode(status)}\n")
        sys.stdout.flush()
    return 0


def main(argv):
    try:
        if argv == ["--serve"]:
            return serve()
        return compile_job(load(), argv)
    except llvm22.Fail as e:
        sys.stderr.write(f"llvm22-memmodel: {e}\n")
        return e.code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
