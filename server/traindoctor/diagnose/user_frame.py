"""The one definition of "user frame", for the CLI, the language server, live diagnosis and
the extension (which asks the server, command `traindoctor.userFrame`).

A user frame is code the user owns: not site-packages/dist-packages, not the standard
library, not torch or a launcher script, not interpreter-generated code. The frame a
diagnosis points at is the deepest such frame. Live, a debugger frame must also have a
source and not be marked `subtle` (debugpy's library/justMyCode hint); frames inside the
workspace folders win over other user frames.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

from ..internal_frames import is_internal_path
from ..model import Frame

_NON_USER = re.compile(
    r"(?:^|[/\\])(?:site-packages|dist-packages|torch|conda-bld)(?:[/\\]|$)"
    r"|[/\\]lib[/\\]python\d[\d.]*[/\\]"
    r"|[/\\]Python\d*[/\\][Ll]ib[/\\]|^[A-Za-z]:[/\\].*[/\\][Ll]ib[/\\](?!site-packages)"
    r"|[/\\](?:bin|Scripts)[/\\][^/\\.]+$|[/\\](?:bin|Scripts)[/\\][^/\\]+\.exe[/\\]__main__\.py$"
    r"|^<(?:frozen|built-in|__array_function__|decorator-gen|makefun-gen|string>$)"
    # a compiled Cython module (numpy.random's mtrand.pyx): Cython records its source path as it was
    # at build time, relative, never where the package is installed
    r"|^(?![/\\]|[A-Za-z]:)[^\s:]*\.p(?:yx|xd|xi)$"
)


def is_user_path(path: str) -> bool:
    """The user's own code: not site-packages, the stdlib, torch or a launcher (nor ours)."""
    return bool(path) and not _NON_USER.search(path) and not is_internal_path(path)


def deepest_user_frame(frames: tuple[Frame, ...] | list[Frame]) -> Frame | None:
    """Frames in print order (outermost first): the last one in user code."""
    for frame in reversed(frames):
        if frame.is_user:
            return frame
    return None


def dap_user_frame(stack_frames: Iterable[dict[str, Any]], folders: Iterable[str | Path] = ()) -> dict[str, Any] | None:
    """Among a DAP stackTrace's frames (innermost first), the deepest user frame: with a
    source path, not `subtle`/`label`, `is_user_path`, preferring frames under `folders`.
    Falls back to the innermost frame with a source, then the innermost frame."""
    frames = [f for f in stack_frames if isinstance(f, dict)]
    roots = [str(Path(f).resolve()) for f in folders]

    def path_of(frame: dict[str, Any]) -> str:
        return str((frame.get("source") or {}).get("path") or "")

    shown = [f for f in frames if path_of(f) and f.get("presentationHint") not in ("subtle", "label")]
    users = [f for f in shown if is_user_path(path_of(f))]
    inside = [f for f in users if any(_under(path_of(f), root) for root in roots)]
    for group in (inside, users, shown, frames):
        if group:
            return group[0]
    return None


def _under(path: str, root: str) -> bool:
    try:
        return Path(path).resolve().is_relative_to(root)
    except (OSError, ValueError):
        return False
