"""``python -m gfxkit``: ``census`` runs :mod:`gfxkit.census.cli`; every other command goes to the
``gfxkit`` binary when one is on ``PATH`` (``GFXKIT_BIN`` names another)."""

from __future__ import annotations

import os
import shutil
import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "census":
        from .census.cli import main as census_main

        return census_main(argv[1:])
    binary = os.environ.get("GFXKIT_BIN") or shutil.which("gfxkit")
    if not binary:
        print(
            "python -m gfxkit: only `census` is served here; other commands need the gfxkit "
            "binary on PATH (or GFXKIT_BIN)",
            file=sys.stderr,
        )
        return 2
    import subprocess

    return subprocess.call([binary, *argv])


if __name__ == "__main__":
    sys.exit(main())
