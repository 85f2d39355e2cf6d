"""Split a module into top-level blocks that libcst can parse on their own.

A block is one top-level statement (with its decorators) plus the comments and
blank lines before it. Blocks are the unit of caching: after an edit only the
blocks whose text changed are parsed and checked again. Python's own `ast`
finds the boundaries (an order of magnitude cheaper than a libcst parse).
"""

from __future__ import annotations

import ast
import io
from dataclasses import dataclass


@dataclass(frozen=True)
class Block:
    start_line: int  # 0-based line of the block's first line in the file
    text: str


class SourceSyntaxError(ValueError):
    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


def split_blocks(source: str) -> list[Block]:
    """Top-level blocks covering the whole source, in order."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise SourceSyntaxError(exc.msg or "invalid syntax", exc.lineno) from None
    except (ValueError, MemoryError, RecursionError) as exc:  # e.g. NUL bytes, absurd nesting
        raise SourceSyntaxError(str(exc) or type(exc).__name__, None) from None
    # Only \n, \r\n and \r end lines for the parsers (str.splitlines also splits on \f etc.).
    lines = io.StringIO(source, newline="").readlines()
    # 0-based [start, end) line spans of statements; overlapping spans
    # (`a = 1; b = 2`) are merged into one block.
    spans: list[list[int]] = []
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())]) - 1
        last = (node.end_lineno or node.lineno)
        if spans and first < spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], last)
        else:
            spans.append([first, last])
    blocks: list[Block] = []
    cursor = 0
    for index, (first, last) in enumerate(spans):
        end = last if index + 1 < len(spans) else len(lines)
        blocks.append(Block(cursor, "".join(lines[cursor:end])))
        cursor = end
    if cursor < len(lines) or not blocks:
        trailing = "".join(lines[cursor:])
        if blocks:
            prev = blocks[-1]
            blocks[-1] = Block(prev.start_line, prev.text + trailing)
        else:
            blocks.append(Block(0, trailing))
    return blocks
