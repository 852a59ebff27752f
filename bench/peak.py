#!/usr/bin/env python3
"""Runs a command and prints its wall time in seconds and its peak anonymous memory in KiB.

    peak.py CMD [ARG...]        prints "<seconds> <peak RssAnon KiB> <exit code> <CPU seconds>"

Peak anonymous memory is sampled from /proc/<pid>/status (RssAnon) every millisecond, summed
over the command and its children; file-backed pages (memory-mapped inputs, the page cache)
are not counted. CPU seconds are user plus system time of the command (getrusage of the child,
its threads included). The command's own output goes to /dev/null.
"""
import os
import subprocess
import sys
import time


def rss_anon(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree(pid):
    out = [pid]
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            for c in f.read().split():
                out.extend(tree(int(c)))
    except OSError:
        pass
    return out


def main():
    cmd = sys.argv[1:]
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            break
        peak = max(peak, sum(rss_anon(q) for q in tree(p.pid)))
        time.sleep(0.001)
    wall = time.perf_counter() - start
    rc = os.waitstatus_to_exitcode(status)
    print(f"{wall:.4f} {peak} {rc} {ru.ru_utime + ru.ru_stime:.4f}")


if __name__ == "__main__":
    main()
