"""A one-node Slurm cluster for the census tests, on loopback: MUNGE for authentication, the
controller (slurmctld) and the node daemon (slurmd) from Debian's packages
(`scripts/ensure-slurm`), each in the foreground under this process, with their state, spool,
logs and key in a private directory. `sbatch`, `srun` and dask-jobqueue reach it through
``SLURM_CONF``, which :func:`cluster` sets for the processes the test starts."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

DAEMONS = ("munged", "slurmctld", "slurmd")


def available() -> bool:
    """Whether Slurm and MUNGE are installed and this process may start them (root)."""
    return os.geteuid() == 0 and all(shutil.which(d) for d in DAEMONS) and bool(shutil.which("sbatch"))


def require() -> None:
    """Skips the test when Slurm cannot run here, or fails it where ``GFXKIT_REQUIRE_SLURM`` says
    it must (the project's test run installs Slurm and sets it)."""
    if available():
        return
    why = "Slurm (slurmctld, slurmd, sbatch, munged) and root are needed: run `bash scripts/ensure-slurm`"
    if os.environ.get("GFXKIT_REQUIRE_SLURM"):
        pytest.fail(why)
    pytest.skip(why)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CONF = """ClusterName=gfxkittest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
AuthInfo=socket={socket}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/log/slurmctld.log
SlurmdLogFile={dir}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MinJobAge=3600
SlurmdParameters=config_overrides
NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=16384 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""


def _wait(what: str, ready, logs: list[Path], timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if ready():
            return
        time.sleep(0.2)
    tails = "\n".join(f"{p}:\n{p.read_text(errors='replace')[-2000:]}" for p in logs if p.exists())
    raise RuntimeError(f"{what} did not come up in {timeout} s\n{tails}")


@contextlib.contextmanager
def cluster(cpus: int = 8):
    """Starts the cluster, yields its directory, and stops it (every job cancelled first).
    ``cpus`` is what the node declares: more than the machine has, so that a job of several
    tasks fits on a two-core machine, as the census tests need."""
    require()
    d = Path(tempfile.mkdtemp(prefix="gfxkit-slurm-"))
    # The MUNGE daemon runs as its own user and checks that the path to its socket is
    # traversable by all and writable by none but itself.
    d.chmod(0o755)
    munge = d / "munge"
    munge.mkdir()
    for sub in ("state", "spool", "log"):
        (d / sub).mkdir()
    (munge / "munge.key").write_bytes(os.urandom(1024))
    user = pwd.getpwnam("munge")
    for p in (munge, munge / "munge.key"):
        os.chown(p, user.pw_uid, user.pw_gid)
    (munge / "munge.key").chmod(0o600)
    sock = munge / "munge.socket"
    conf = d / "slurm.conf"
    conf.write_text(CONF.format(ctld_port=_free_port(), slurmd_port=_free_port(), socket=sock, dir=d,
                                cpus=cpus))
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(conf)
    procs: list[subprocess.Popen] = []
    logs = [munge / "munged.log", d / "log" / "slurmctld.log", d / "log" / "slurmd.log"]
    try:
        procs.append(subprocess.Popen(
            ["runuser", "-u", "munge", "--", "munged", "--foreground", f"--socket={sock}",
             f"--key-file={munge / 'munge.key'}", f"--pid-file={munge / 'munged.pid'}",
             f"--log-file={munge / 'munged.log'}", f"--seed-file={munge / 'seed'}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        _wait("munged", sock.exists, logs)
        procs.append(subprocess.Popen(["slurmctld", "-D", "-i", "-f", str(conf)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        procs.append(subprocess.Popen(["slurmd", "-D", "-f", str(conf), "-N", "localhost"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

        def idle() -> bool:
            r = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True)
            return r.returncode == 0 and r.stdout.strip() == "idle"

        _wait("the Slurm node", idle, logs)
        yield d
    finally:
        if procs:
            subprocess.run(["scancel", "--full", "--user", "root"], capture_output=True)
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old
        shutil.rmtree(d, ignore_errors=True)


def jobs() -> list[dict[str, str]]:
    """Every job the controller knows (finished ones stay for an hour: ``MinJobAge``), with
    its ID, name, state and exit code."""
    out = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i|%j|%T"], capture_output=True,
                         text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        job, name, state = line.split("|")
        rows.append({"id": job, "name": name, "state": state})
    return rows
