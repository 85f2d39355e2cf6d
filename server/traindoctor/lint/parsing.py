"""Parse blocks with libcst, without libcst's per-node validation.

Every node libcst builds runs `_validate` from `CSTNode.__post_init__`. For nodes the
parser builds from source that parsed, the checks cannot fail, and they are a third of
the parse time (libcst's own comment there says validation should be skipped when
parsing a file). The hook is switched off only around the parser call; a node another
thread builds in that moment goes unvalidated, which loses only an early error for a
node that code built wrongly.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator

import libcst as cst
from libcst._nodes.base import CSTNode

_VALIDATING_POST_INIT = CSTNode.__post_init__
_lock = threading.Lock()
_parsing = 0


def _skip_validation(self: CSTNode) -> None:
    pass


@contextlib.contextmanager
def _unvalidated() -> Iterator[None]:
    global _parsing
    with _lock:
        _parsing += 1
        CSTNode.__post_init__ = _skip_validation  # type: ignore[method-assign]
    try:
        yield
    finally:
        with _lock:
            _parsing -= 1
            if not _parsing:
                CSTNode.__post_init__ = _VALIDATING_POST_INIT  # type: ignore[method-assign]


def parse_module(text: str) -> cst.Module:
    """`cst.parse_module(text)` without validating the nodes it builds (same errors)."""
    with _unvalidated():
        return cst.parse_module(text)
