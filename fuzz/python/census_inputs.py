"""Fuzz target for what the census reads before any device code: a simple index's project page
(PEP 691 JSON or PEP 503 HTML, as a server sends it), a ``--from`` list, and the ``#sha256=``
fragment of a URL. Each either gives well-formed results or raises RuntimeError (the census
turns that into its error message); nothing else may escape.

    pip install atheris
    python fuzz/python/census_inputs.py -atheris_runs=10000000 fuzz/corpus/census_inputs

``check`` is the body; ``tests/python/test_census.py`` runs it on its seeds and on random
bytes with every test run."""

from __future__ import annotations

import sys
from typing import Optional

from gfxkit.census.inputs import parse_index_page, parse_list, split_url

PAGE = "https://index.example/simple/proj/"


def _digest_ok(d: Optional[str]) -> bool:
    return d is None or (isinstance(d, str) and d == d.lower() and d != "")


def check(data: bytes) -> None:
    """One input: its first byte picks the reader, the rest is what that reader is given."""
    if not data:
        return
    kind, body = data[0] % 4, data[1:]
    if kind in (0, 1):
        ctype = "application/vnd.pypi.simple.v1+json" if kind == 0 else "text/html"
        try:
            files = parse_index_page(body, ctype, PAGE)
        except RuntimeError as e:
            assert PAGE in str(e), e
            return
        for url, digest in files:
            assert isinstance(url, str) and "#" not in url, url
            assert _digest_ok(digest), digest
    elif kind == 2:
        try:
            lines = parse_list(body, "list.txt")
        except RuntimeError as e:
            assert str(e).startswith("list.txt: line "), e
            return
        for line in lines:
            assert line and line == line.strip() and not line.startswith("#"), line
            assert "\n" not in line and "\r" not in line, line
    else:
        text = body.decode("utf-8", "replace")
        base, digest = split_url(text)
        assert "#" not in base and text.startswith(base), (text, base)
        assert _digest_ok(digest), digest


def main() -> None:
    import atheris

    # Coverage of every Python function loaded (the readers and json/html.parser under them).
    atheris.instrument_all()
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
