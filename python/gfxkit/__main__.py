"""The ``gfxkit`` command: ``python -m gfxkit ...`` and the ``gfxkit`` script the package installs.

Both run the same Rust program as the cargo-built ``gfxkit`` binary (options, output bytes,
exit codes): the native module's ``main`` writes to this process's stdout and stderr itself.
Invoked under a name starting with ``clang-offload-bundler`` (a link to the script), it is
the drop-in ``clang-offload-bundler``. ``census`` runs :mod:`gfxkit.census.cli` (the Rust
binary's ``gfxkit census`` comes here too).
"""

from __future__ import annotations

import os
import signal
import sys


def main() -> None:
    """Runs ``gfxkit`` on ``sys.argv`` and exits with its status."""
    argv = list(sys.argv)
    name = os.path.basename(argv[0]) if argv else ""
    if not argv or name in ("__main__.py", "-m", "-c", ""):
        argv[:1] = ["gfxkit"]
    if len(argv) > 1 and argv[1] == "census" and not name.startswith("clang-offload-bundler"):
        from .census.cli import main as census_main

        sys.exit(census_main(argv[2:]))
    # As a native program: Ctrl-C ends the process and a closed pipe is an error the program
    # handles (Python ignores SIGPIPE already, as Rust's runtime does).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    from gfxkit import _gfxkit

    sys.stdout.flush()
    sys.exit(_gfxkit.main(argv))


if __name__ == "__main__":
    main()
