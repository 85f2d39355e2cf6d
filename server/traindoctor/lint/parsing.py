"""Parse blocks with libcst, without libcst's per-node validation, and many one-line
blocks with one parser call.

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
from typing import Iterator, Sequence

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


# A parser call costs about as much as 60 µs of parsing: a file of 50,000 one-line
# statements spent a third of its parse time starting the parser. Runs of such blocks
# are parsed together, up to this many blocks or characters at a time.
_BATCH_BLOCKS = 100
_BATCH_CHARS = 20_000


def parse_modules(texts: Sequence[str]) -> list[cst.Module | None]:
    """The module of each text as `parse_module` builds it; None where that fails (the
    caller parses it alone for the error). Runs of one-line statements are parsed in one
    call and split into one module per text."""
    modules: list[cst.Module | None] = [None] * len(texts)
    run: list[int] = []
    size = 0
    for index, text in enumerate(texts):
        if _one_line_statement(text):
            run.append(index)
            size += len(text)
            if len(run) >= _BATCH_BLOCKS or size >= _BATCH_CHARS:
                _parse_run(texts, run, modules)
                run, size = [], 0
        else:
            _parse_run(texts, run, modules)
            run, size = [], 0
            modules[index] = _parse_or_none(text)
    _parse_run(texts, run, modules)
    return modules


_OPENS_BLOCK = ("if", "elif", "else", "for", "while", "with", "def", "class", "try", "except", "finally",
                "async", "match", "case")


def _one_line_statement(text: str) -> bool:
    """Blank and comment lines, then one line of code that is a whole simple statement
    (no indentation, no continuation, no block): it cannot contain an INDENT token or
    another newline than `\\n`, and ends with one (only the file's last block may not)."""
    if "\r" in text or not text.endswith("\n"):
        return False
    lines = text.split("\n")
    code = lines[-2]
    if code[:1] in ("", " ", "\t", "\f", "@", "#") or code.rstrip().endswith((":", "\\")) or \
            code.split(None, 1)[0].split("(", 1)[0] in _OPENS_BLOCK:
        return False
    return all(not line.strip() or line.lstrip().startswith("#") for line in lines[:-2])


def _parse_or_none(text: str) -> cst.Module | None:
    try:
        return parse_module(text)
    except Exception:
        return None


def _parse_run(texts: Sequence[str], run: list[int], modules: list[cst.Module | None]) -> None:
    if len(run) < 2 or not _parse_together(texts, run, modules):
        for index in run:
            modules[index] = _parse_or_none(texts[index])


def _parse_together(texts: Sequence[str], run: list[int], modules: list[cst.Module | None]) -> bool:
    """Parse the run in one call; False when the batch does not split into its blocks."""
    batch = _parse_or_none("".join(texts[i] for i in run))
    body = batch.body if batch is not None else ()
    if len(body) != len(run) or batch.footer or not all(isinstance(s, cst.SimpleStatementLine) for s in body):
        return False
    with _unvalidated():
        for position, (index, statement) in enumerate(zip(run, body)):
            # Parsed alone, a block's leading comments and blank lines are the module's header.
            header = batch.header if position == 0 else statement.leading_lines
            modules[index] = cst.Module(
                body=[statement.with_changes(leading_lines=()) if statement.leading_lines else statement],
                header=header, footer=(), encoding=batch.encoding, default_indent=batch.default_indent,
                default_newline="\n", has_trailing_newline=True)
    return True
