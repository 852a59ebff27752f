"""Type stub of the native module ``gfxkit._gfxkit`` (Rust, PyO3). Use the ``gfxkit``
package, which wraps these functions in typed results."""

import os
from typing import Any, Dict, List, Optional, Tuple, Union

_Source = Union[str, os.PathLike[str], bytes, bytearray, memoryview]

__version__: str

class TargetId:
    """An AMDGPU target ID (``gfx90a:sramecc+:xnack-``). ``str()`` is the canonical form."""

    def __new__(cls, text: str) -> "TargetId": ...
    @property
    def processor(self) -> str:
        """The processor name (aliases resolved)."""
    @property
    def features(self) -> Dict[str, bool]:
        """The settings named, ``{"sramecc": True, "xnack": False}``."""
    def is_compatible_with(self, device: "TargetId") -> bool:
        """Whether code built for this target ID runs on ``device``."""
    def __str__(self) -> str: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

def list(src: _Source, check: bool = False, strict: bool = True) -> Dict[str, Any]: ...
def select(src: _Source, device: str) -> Dict[str, Any]: ...
def verify(src: _Source) -> Dict[str, Any]: ...
def doctor(paths: List[str], devices: List[str]) -> Dict[str, Any]: ...
def size(src: _Source, keep: List[str] = ...) -> Dict[str, Any]: ...
def extract(
    src: _Source, targets: List[str] = ..., ignore_hash: bool = False
) -> List[Tuple[str, bytes, int, int, int, str, Optional[str]]]: ...
def inspect(src: _Source, demangle: bool = False) -> Dict[str, Any]: ...
def prune(
    src: _Source,
    keep: List[str] = ...,
    drop: List[str] = ...,
    output: Optional[str] = None,
    in_place: bool = False,
    uncompressed: bool = False,
    ccob_version: Optional[int] = None,
    method: Optional[str] = None,
    level: Optional[int] = None,
) -> Dict[str, Any]: ...
def recompress(
    src: _Source,
    output: Optional[str] = None,
    in_place: bool = False,
    uncompressed: bool = False,
    ccob_version: Optional[int] = None,
    method: Optional[str] = None,
    level: Optional[int] = None,
) -> Dict[str, Any]: ...
def compatible(code_object_id: str, device_id: str) -> bool: ...
def processors() -> List[Dict[str, Any]]: ...
def memmodel(
    cpu: str,
    case: str,
    cumode: bool = False,
    tgsplit: bool = False,
    os: str = "amdhsa",
    skip_cache_invalidations: bool = False,
) -> List[str]: ...
