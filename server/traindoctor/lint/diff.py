"""The unified diff that `--diff`, notebooks and diagnoses print for a fix."""

from __future__ import annotations

import difflib
import os


def diff_name(path: str) -> str:
    """`path` as git names it after a/ and b/: relative to the working folder when inside it,
    else without its leading slash (`a/tmp/t.py`, never `a//tmp/t.py`)."""
    if os.path.isabs(path):
        try:
            relative = os.path.relpath(path)
        except ValueError:  # another drive on Windows
            relative = path
        path = relative if not relative.startswith("..") else path
    return path.replace(os.sep, "/").lstrip("/")


def unified_diff(old: list[str], new: list[str], path: str, *, where: str = "", context: int = 3) -> str:
    """Lines (with their ends) before and after a fix of `path`; `where` names a part of it (a cell)."""
    name = diff_name(path) + where
    return "".join(difflib.unified_diff(old, new, fromfile=f"a/{name}", tofile=f"b/{name}", n=context))
