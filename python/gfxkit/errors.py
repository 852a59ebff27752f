"""The errors gfxkit raises: :class:`Error` and its subclasses, each carrying where."""

from __future__ import annotations

from typing import Optional


class Error(Exception):
    """A gfxkit error: the message, and where it was found.

    Attributes:
        file: the input's name (its path, or ``"<bytes>"``); ``""`` when no file is involved.
        entry: the bundle entry concerned (header order), when known.
        offset: the byte offset the message names, when known (from the start of the file or
            of the bundle, as the message says).
    """

    def __init__(
        self,
        message: str,
        file: str = "",
        entry: Optional[int] = None,
        offset: Optional[int] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.entry = entry
        self.offset = offset


class FormatError(Error):
    """Damaged or unreadable device code (a truncated bundle, a bad CCOB header, a hash
    mismatch, a file that is not a code object where one is needed)."""


class TargetError(Error, ValueError):
    """A target ID, entry ID or device that does not parse (``gfx90a:xnack*``)."""


class UsageError(Error, ValueError):
    """A call the command line would refuse as bad usage (exit status 2 there): a memory-model
    case that does not parse or is not valid on the processor, an unknown processor or OS."""


class NoDeviceCodeError(Error):
    """The file holds no device code where some is needed (``verify``)."""


class DeviceError(Error):
    """No device to judge against: ``devices="auto"`` found no GPU in the KFD topology, or a
    GPU node names a processor gfxkit does not know (``file`` is the topology path)."""


__all__ = ["Error", "FormatError", "TargetError", "UsageError", "NoDeviceCodeError", "DeviceError"]
