"""What a census reads: its inputs expanded into items (files, package members, container
images, globs, ``--from`` lists, directories walked as ``gfxkit list -r`` walks them, URLs,
every file of projects in a PEP 503/691 simple index), and the download of a URL to a scratch
directory with its digest checked.

An item is ``{"name", "source", "sha256", "aliases"}``: ``name`` is how rows name the input
(the path as given, or the URL without its fragment), ``source`` what a worker reads (an
absolute path, or the URL), ``sha256`` the digest a URL must have (or None), ``aliases`` other
names of the same content (same digest), whose rows are copies of this item's rows.

Local files are matched by content too: files of one size are compared by identity (hard and
symbolic links to one file) and then, where their first and last KiB tie too, by SHA-256,
hashed in parallel; a file whose size no other input has is never read here.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import tempfile
import urllib.parse
from html.parser import HTMLParser
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, TypeVar

#: How long a download or an index request may stall, in seconds.
TIMEOUT = 60

#: How many times a download or an index request is tried when it fails for a reason that may
#: pass (a connection refused, reset or cut short, a stall, HTTP 408, 425, 429, 500, 502, 503,
#: 504): a census of thousands of files from one index meets some.
ATTEMPTS = 4

#: The wait before the first retry, in seconds, doubled before each next one; a server's
#: ``Retry-After`` (in seconds, up to :data:`MAX_WAIT`) is waited instead.
BACKOFF = 1.0

#: The longest wait before a retry, in seconds.
MAX_WAIT = 60.0

_TRANSIENT_HTTP = frozenset({408, 425, 429, 500, 502, 503, 504})


def _transient(e: BaseException) -> bool:
    """Whether a failed request may succeed when tried again."""
    import http.client
    import ssl
    import urllib.error

    if isinstance(e, urllib.error.HTTPError):
        return e.code in _TRANSIENT_HTTP
    if isinstance(e, urllib.error.URLError):
        # Not a certificate that does not verify, nor a scheme urllib cannot open.
        return isinstance(e.reason, OSError) and not isinstance(e.reason, ssl.SSLCertVerificationError)
    return isinstance(e, (http.client.IncompleteRead, http.client.RemoteDisconnected, ConnectionError, TimeoutError))


def _wait(e: BaseException, attempt: int) -> float:
    """Seconds to wait before trying again after the ``attempt``-th failure ``e``."""
    import urllib.error

    if isinstance(e, urllib.error.HTTPError):
        after = (e.headers or {}).get("Retry-After", "")
        if after.strip().isdigit():
            return min(float(after), MAX_WAIT)
    return min(BACKOFF * 2 ** (attempt - 1), MAX_WAIT)


T = TypeVar("T")


def _tried(attempt: Callable[[], T]) -> T:
    """``attempt()``, called again (up to :data:`ATTEMPTS` times in all, waiting between) while
    it fails for a reason that may pass. What it raised last is raised, with a note of how
    many times it was tried (``args``' first item prefixed: ``after 4 attempts: ...``)."""
    import time

    for n in range(1, ATTEMPTS + 1):
        try:
            return attempt()
        except Exception as e:  # noqa: BLE001 - sorted by _transient, raised again
            if n == ATTEMPTS or not _transient(e):
                if n > 1:
                    raise _Exhausted(n, e) from e
                raise
            time.sleep(_wait(e, n))
    raise AssertionError("unreachable")


class _Exhausted(Exception):
    """A request that failed every one of its attempts: says how many, then why."""

    def __init__(self, attempts: int, last: BaseException) -> None:
        super().__init__(f"after {attempts} attempts: {last}")


_LINE_BREAK = re.compile(r"\r\n|\r|\n")

#: What makes a path a glob (as ``glob.has_magic`` says).
_MAGIC = re.compile(r"[*?[]")

#: What an input must have to be a URL or a glob: one test for most inputs, plain paths.
_URL_OR_MAGIC = re.compile(r"https?://|[*?[]")


def is_url(s: str) -> bool:
    return s.startswith(("http://", "https://"))


def split_url(url: str) -> Tuple[str, Optional[str]]:
    """The URL without its fragment, and the SHA-256 a ``#sha256=HEX`` fragment names."""
    base, _, frag = url.partition("#")
    digest = None
    for part in frag.split("&"):
        k, _, v = part.partition("=")
        if k == "sha256" and v:
            digest = v.lower()
    return base, digest


def read_list(path: str) -> List[str]:
    """The inputs of a ``--from`` file: one a line, blank lines and ``#`` comments skipped."""
    with open(path, "rb") as f:
        return parse_list(f.read(), path)


def parse_list(data: bytes, path: str) -> List[str]:
    """The inputs a ``--from`` file's bytes name (UTF-8, one a line); a line that is not UTF-8
    raises RuntimeError naming ``path`` and the line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        # Which line: decoded one by one.
        for n, raw in enumerate(data.splitlines(), 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise RuntimeError(f"{path}: line {n}: not UTF-8 ({e.reason} at byte {e.start})") from e
        raise
    # Split where bytes.splitlines splits (not at the other line breaks str.splitlines knows).
    lines = (line.strip() for line in _LINE_BREAK.split(text))
    return [line for line in lines if line and not line.startswith("#")]


def _normalize(project: str) -> str:
    return re.sub(r"[-_.]+", "-", project).lower()


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: List[str] = []

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        if tag == "a":
            for k, v in attrs:
                if k == "href" and v:
                    self.links.append(v)


#: The largest index page read, in bytes: PyPI's largest project pages are a few MB.
MAX_INDEX_PAGE = 64 << 20


def index_files(index: str, project: str) -> List[Tuple[str, Optional[str]]]:
    """Every file of ``project`` in the simple index at ``index`` (PEP 691 JSON when the
    server offers it, else PEP 503 HTML): ``(url, sha256 or None)`` in the index's order."""
    import http.client
    import urllib.error
    import urllib.request  # here: HTTP costs a local census nothing

    page = index.rstrip("/") + "/" + _normalize(project) + "/"
    req = urllib.request.Request(
        page,
        headers={
            "Accept": "application/vnd.pypi.simple.v1+json, "
            "application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
        },
    )
    def fetch() -> Tuple[str, bytes, str]:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
            return r.headers.get("Content-Type", ""), r.read(MAX_INDEX_PAGE + 1), r.geturl()

    try:
        ctype, body, final = _tried(fetch)
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException, _Exhausted) as e:
        raise RuntimeError(f"{page}: cannot read the index page of {project}: {e}") from e
    if len(body) > MAX_INDEX_PAGE:
        raise RuntimeError(f"{page}: the index page of {project} is larger than {MAX_INDEX_PAGE} bytes")
    return parse_index_page(body, ctype, final)


def parse_index_page(body: bytes, content_type: str, url: str) -> List[Tuple[str, Optional[str]]]:
    """The files a project page lists, ``(url, sha256 or None)`` in its order, with links
    resolved against the page's ``url``: PEP 691 JSON when ``content_type`` says JSON, else
    the links of PEP 503 HTML. A page that is not what it says raises RuntimeError naming the
    page and the place."""
    out: List[Tuple[str, Optional[str]]] = []
    if "json" in content_type:
        try:
            data = json.loads(body)
        except ValueError as e:
            raise RuntimeError(f"{url}: not a PEP 691 project page: {e}") from e
        files = data.get("files") if isinstance(data, dict) else None
        if not isinstance(files, list):
            raise RuntimeError(f"{url}: not a PEP 691 project page: no list of files")
        for i, f in enumerate(files):
            link = f.get("url") if isinstance(f, dict) else None
            hashes = (f.get("hashes") or {}) if isinstance(f, dict) else None
            if not isinstance(link, str) or not isinstance(hashes, dict):
                raise RuntimeError(f"{url}: not a PEP 691 project page: files[{i}] has no url string "
                                   "and hashes table")
            digest = hashes.get("sha256")
            if digest is not None and not isinstance(digest, str):
                raise RuntimeError(f"{url}: not a PEP 691 project page: files[{i}].hashes.sha256 "
                                   "is not a string")
            base, frag = _resolved(url, link, f"files[{i}].url")
            out.append((base, digest.lower() if digest else frag))
        return out
    parser = _Links()
    try:
        parser.feed(body.decode("utf-8", "replace"))
        parser.close()
    except AssertionError as e:
        # Python's HTML parser refuses some malformed declarations (`<![` and no name) so.
        raise RuntimeError(f"{url}: not a PEP 503 project page: {e}") from e
    for i, href in enumerate(parser.links):
        out.append(_resolved(url, href, f"link {i + 1}"))
    return out


def _resolved(page: str, link: str, where: str) -> Tuple[str, Optional[str]]:
    try:
        return split_url(urllib.parse.urljoin(page, link))
    except ValueError as e:
        raise RuntimeError(f"{page}: {where}: not a URL ({link!r}): {e}") from e


def expand(
    inputs: Sequence[str],
    from_lists: Sequence[str] = (),
    index: Optional[str] = None,
    projects: Sequence[str] = (),
    threads: Optional[int] = None,
) -> List[Dict[str, Any]]:
    """The items of a census (see the module documentation), sorted by name; each input
    reached twice (the same name, the same file by path, or the same digest) once, the other
    names of a digest as ``aliases``. Local inputs are walked on ``threads`` threads (default:
    one per core)."""
    from .. import _gfxkit

    raw: List[str] = list(inputs)
    for lst in from_lists:
        raw.extend(read_list(lst))
    urls: List[Tuple[str, Optional[str]]] = []
    local: List[str] = []
    for s in raw:
        if _URL_OR_MAGIC.search(s) is None:
            local.append(s)
        elif is_url(s):
            urls.append(split_url(s))
        elif _MAGIC.search(s) and not os.path.exists(s):
            hits = sorted(glob.glob(s, recursive=True))
            # A glob that matches nothing is reported as the input it names.
            local.extend(hits or [s])
        else:
            local.append(s)
    if index:
        for p in projects:
            urls.extend(index_files(index, p))
    # Each walked on its own, all at once; one that cannot be walked (missing) is an input
    # as named, a row with its error. Sizes are transient: the plan closes local shards by
    # bytes (and does not keep them).
    found, sources, sizes, copies, beside = _gfxkit.census_local_inputs(local, threads)
    items: Dict[str, Dict[str, Any]] = {
        n: {"name": n, "source": src, "sha256": None, "aliases": [], "size": size}
        for n, src, size in zip(found, sources, sizes)
    }
    # A library named alone is read with the kernel databases beside it, as check reads it.
    for n, b in zip(found, beside):
        if b:
            items[n]["beside"] = True
    # The items given other names.
    named: List[List[str]] = []
    for first, others in copies:
        aliases = items[found[first]]["aliases"]
        named.append(aliases)
        for o in others:
            aliases.append(found[o])
            del items[found[o]]
    by_digest: Dict[str, str] = {}
    for url, digest in urls:
        if url in items:
            continue
        if digest and digest in by_digest:
            aliases = items[by_digest[digest]]["aliases"]
            aliases.append(url)
            named.append(aliases)
            continue
        items[url] = {"name": url, "source": url, "sha256": digest, "aliases": []}
        if digest:
            by_digest[digest] = url
    for aliases in named:
        aliases.sort()
    # The local names come sorted (as Python orders them); URLs go among them.
    return [items[k] for k in sorted(items)] if urls else list(items.values())


def download(url: str, scratch: str, expected: Optional[str]) -> Tuple[str, str]:
    """Downloads ``url`` into a new file under ``scratch``; returns (its path, its SHA-256).
    A download that fails for a reason that may pass is tried again (:data:`ATTEMPTS`), from
    where it stopped when the server sends ranges of the same file (``Range`` with
    ``If-Range``), else from the start.
    Raises RuntimeError naming the URL when the download fails or the digest differs from
    ``expected``; the partial file is removed then."""
    import http.client
    import urllib.error
    import urllib.request

    os.makedirs(scratch, exist_ok=True)
    name = os.path.basename(urllib.parse.urlparse(url).path) or "download"
    d = tempfile.mkdtemp(prefix="gfxkit-census-", dir=scratch)
    path = os.path.join(d, name)

    # What earlier attempts wrote: the bytes (hashed so far) and what names the file's version.
    done: Dict[str, Any] = {"hash": hashlib.sha256(), "bytes": 0, "validator": None}

    def fetch() -> str:
        req = urllib.request.Request(url)
        if done["bytes"] and done["validator"]:
            req.add_header("Range", f"bytes={done['bytes']}-")
            req.add_header("If-Range", done["validator"])
        try:
            opened = urllib.request.urlopen(req, timeout=TIMEOUT)
        except urllib.error.HTTPError as e:
            if e.code != 416 or not req.has_header("Range"):
                raise
            # No such range (the file is shorter now): the next attempt from the start.
            done.update(hash=hashlib.sha256(), bytes=0, validator=None)
            raise ConnectionError(f"the server has no bytes from {req.get_header('Range')}") from e
        with opened as r:
            start = _resumed_at(r)
            if start is None:
                # The whole file (ranges not sent, or the file changed): from the start.
                start = 0
                done.update(hash=hashlib.sha256(), bytes=0)
            elif start != done["bytes"]:
                # Another range than asked for: the next attempt asks for the whole file.
                asked = done["bytes"]
                done.update(hash=hashlib.sha256(), bytes=0, validator=None)
                raise ConnectionError(f"the server sent bytes from {start}, not from {asked}")
            done["validator"] = r.headers.get("ETag") or r.headers.get("Last-Modified")
            with open(path, "r+b" if done["bytes"] else "wb") as f:
                f.seek(done["bytes"])
                f.truncate()
                while True:
                    chunk = r.read(1 << 20)
                    if not chunk:
                        break
                    f.write(chunk)
                    done["hash"].update(chunk)
                    done["bytes"] += len(chunk)
            # A connection closed early ends the reads as the end of the body would (http.client
            # raises nothing for it): the length the server announced tells.
            length = (r.headers.get("Content-Length") or "").strip()
            if length.isdigit() and done["bytes"] < start + int(length):
                raise ConnectionError(
                    f"the connection closed after {done['bytes']} of {start + int(length)} bytes"
                )
        return done["hash"].hexdigest()

    try:
        try:
            got = _tried(fetch)
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException, _Exhausted) as e:
            raise RuntimeError(f"{url}: download failed: {e}") from e
        if expected and got != expected.lower():
            raise RuntimeError(
                f"{url}: SHA-256 mismatch: the index lists {expected.lower()}, the file is {got}"
            )
        return path, got
    except BaseException:
        shutil.rmtree(d, ignore_errors=True)
        raise


def _resumed_at(r: Any) -> Optional[int]:
    """Where the body of response ``r`` starts in the file: the first byte of a partial
    response's ``Content-Range`` (``bytes 1000-1999/2000``), or None for a whole file."""
    if getattr(r, "status", 200) != 206:
        return None
    m = re.match(r"\s*bytes\s+(\d+)-\d+/(\d+|\*)\s*$", r.headers.get("Content-Range") or "")
    if not m:
        raise ConnectionError(f"a partial response without a Content-Range it can be read by: {r.headers.get('Content-Range')!r}")
    return int(m.group(1))


def remove_download(path: str) -> None:
    """Removes a file :func:`download` made, with its directory."""
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def names(items: Iterable[Dict[str, Any]]) -> List[str]:
    """Every name the items answer to (theirs and their aliases)."""
    out: List[str] = []
    for it in items:
        out.append(it["name"])
        out.extend(it["aliases"])
    return out
