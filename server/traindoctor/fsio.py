"""Atomic file replacement: a failed write never leaves a half-written file.

The new content goes to a temporary file in the same folder (same file system,
so the rename is atomic), is flushed to disk, takes the original's mode (and
owner, where we may set it), and only then replaces the original by rename.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def replace_bytes(path: str | Path, data: bytes) -> None:
    """Replace `path` with `data` atomically. Raises OSError; on any failure
    the original file is untouched and the temporary file is removed."""
    path = Path(path)
    # Write through a symlink to its target, never replace the link itself.
    target = Path(os.path.realpath(path))
    info = target.stat()
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".traindoctor-tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, info.st_mode & 0o7777)
        if hasattr(os, "chown"):
            try:
                os.chown(temp, info.st_uid, info.st_gid)
            except PermissionError:
                pass  # not ours to give away: the file keeps our ownership
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    _fsync_folder(target.parent)


def replace_text(path: str | Path, text: str, *, bom: bool = False) -> None:
    """Replace `path` with UTF-8 `text` (line endings as given), keeping a BOM if asked."""
    replace_bytes(path, (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))


def match_line_endings(original: str, new: str) -> str:
    """`new` with the original's line ending where the original used CRLF
    throughout (a fix inserts lines ending in a bare newline)."""
    lines = original.count("\n")
    if lines and original.count("\r\n") == lines:
        return new.replace("\r\n", "\n").replace("\n", "\r\n")
    return new


def has_bom(path: str | Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(3) == b"\xef\xbb\xbf"
    except OSError:
        return False


def _fsync_folder(folder: Path) -> None:
    # The rename itself is durable only once the folder's entry is on disk.
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
