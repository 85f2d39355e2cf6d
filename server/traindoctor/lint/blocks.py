"""Split a module into top-level blocks that libcst can parse on their own.

A block is one top-level statement (with its decorators) plus the comments and
blank lines before it, or a run of simple statements (assignments, calls, imports:
no `def`, `class`, `if`, `for`, ...). Blocks are the unit of caching: after an edit
only the blocks whose text changed are parsed and checked again. A scan of strings,
comments and brackets finds the boundaries (scanned_statements), Python's own `ast`
where the scan is unsure; both are an order of magnitude cheaper than a libcst parse.

Runs exist because each block costs the analysis and the rules a fixed ~0.1 ms: a
script of 120,000 one-line statements spent more on that than on its statements. A
run ends after a simple statement whose text hashes to 0 modulo RUN_LENGTH (or at a
compound statement), so a boundary depends only on the text around it: an edit
re-splits the blocks it touches and gets the blocks a split of the whole file gets.
"""

from __future__ import annotations

import ast
import io
import re
import zlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Block:
    start_line: int  # 0-based line of the block's first line in the file
    text: str
    line_count: int = -1  # lines in `text` (-1: not counted yet)
    opens_with_simple: bool = False  # its first statement is simple
    run_open: bool = False  # it ends with a simple statement that does not end a run

    def lines(self) -> int:
        return self.line_count if self.line_count >= 0 else len(source_lines(self.text))

    def shifted(self, delta: int) -> "Block":
        return Block(self.start_line + delta, self.text, self.lines(), self.opens_with_simple, self.run_open)

    def joins(self, following: "Block") -> bool:
        """Would a split of the whole text put `following` in this block's run?"""
        return self.run_open and following.opens_with_simple


def source_lines(text: str) -> list[str]:
    # Only \n, \r\n and \r end lines for the parsers (str.splitlines also splits on \f etc.).
    return io.StringIO(text, newline="").readlines()


class SourceSyntaxError(ValueError):
    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor, ast.While,
             ast.With, ast.AsyncWith, ast.Try, ast.Match) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
RUN_LENGTH = 64  # statements in a run, on average


def split_blocks(source: str, exactly: bool = False) -> list[Block]:
    """Top-level blocks covering the whole source, in order. The statements come from a
    scan of the text (scanned_statements), unless `exactly` or the scan is unsure: then
    from Python's parser, which raises SourceSyntaxError for a source that does not parse.
    A syntax error that only a parser sees passes the scan; the blocks' own parse then
    fails, and the engine splits again `exactly` (engine.lint_blocks)."""
    lines = source_lines(source)
    statements = None if exactly else scanned_statements(source, lines)
    if statements is None:
        statements = _parsed_statements(source)
    # [start, end) 0-based line spans, whether the first statement is simple, whether the
    # run is open; statements that share a line (`a = 1; b = 2`) share a span.
    spans: list[list] = []
    for first, last, simple in statements:
        if spans and (first < spans[-1][1] or (simple and spans[-1][3])):
            spans[-1][1] = max(spans[-1][1], last)
        else:
            spans.append([first, last, simple, False])
        # Only a run's last line decides whether it ends (the hash of a line shared by
        # two statements is the same for both).
        spans[-1][3] = simple and zlib.crc32("".join(lines[first:last]).encode()) % RUN_LENGTH != 0
    blocks: list[Block] = []
    cursor = 0
    for index, (first, last, opens_with_simple, run_open) in enumerate(spans):
        end = last if index + 1 < len(spans) else len(lines)
        blocks.append(Block(cursor, "".join(lines[cursor:end]), end - cursor, opens_with_simple, run_open))
        cursor = end
    if cursor < len(lines) or not blocks:
        trailing = "".join(lines[cursor:])
        if blocks:
            prev = blocks[-1]
            blocks[-1] = Block(prev.start_line, prev.text + trailing, len(lines) - prev.start_line,
                               prev.opens_with_simple, prev.run_open)
        else:
            blocks.append(Block(0, trailing, len(lines)))
    return blocks


def _parsed_statements(source: str) -> list[tuple[int, int, bool]]:
    """(first line, 0-based, decorators included; the line after its last; is it simple)
    for each top-level statement, from Python's own parser."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise SourceSyntaxError(exc.msg or "invalid syntax", exc.lineno) from None
    except (ValueError, MemoryError, RecursionError) as exc:  # e.g. NUL bytes, absurd nesting
        raise SourceSyntaxError(str(exc) or type(exc).__name__, None) from None
    return [(min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())]) - 1,
             node.end_lineno or node.lineno, not isinstance(node, _COMPOUND)) for node in tree.body]


# What can open or close a bracket or hide a newline: a string's start, a comment, a
# bracket, a newline, a backslash continuation.
_TOKENS = re.compile(r"""(?P<quote>[rRbBuUfF]{0,2}(?:\"\"\"|'''|"|'))|#[^\n]*|(?P<open>[(\[{])"""
                     r"""|(?P<close>[)\]}])|(?P<newline>\n)|(?P<continued>\\\n)""")
# The rest of a string after its opening quote: a backslash escapes any character, a newline
# included (and in a raw string too, for where the string ends).
_STRING_REST = {
    '"""': re.compile(r'(?:[^"\\]|\\.|"(?!""))*"""', re.DOTALL),
    "'''": re.compile(r"(?:[^'\\]|\\.|'(?!''))*'''", re.DOTALL),
    '"': re.compile(r'(?:[^"\\\n]|\\.)*"', re.DOTALL),
    "'": re.compile(r"(?:[^'\\\n]|\\.)*'", re.DOTALL),
}
_COMPOUND_START = re.compile(r"(?:def|class|if|for|while|with|try|async)\b|@")
_CLAUSE_START = re.compile(r"(?:else|elif|except|finally)\b")
_SOFT_KEYWORD = re.compile(r"(?:match|case|type)(?![\w])")
_UNSURE = ("\r", "\f", "\ufeff", "\x00")


def scanned_statements(source: str, lines: list[str]) -> list[tuple[int, int, bool]] | None:
    """What _parsed_statements gives, from a scan of strings, comments and brackets (a
    third of the cost of building the syntax tree); None where the scan is unsure: an
    unclosed string or bracket, a line that cannot start where it does, a soft keyword
    (`match`) at the top level, carriage returns or form feeds. Python's parser decides then."""
    if any(mark in source for mark in _UNSURE):
        return None
    starts = [0]  # lines on which a logical line starts
    depth, position, line, search = 0, 0, 0, _TOKENS.search
    while True:
        token = search(source, position)
        if token is None:
            break
        kind, position = token.lastgroup, token.end()
        if kind == "quote":
            rest = _STRING_REST[token.group("quote").lstrip("rRbBuUfF")].match(source, position)
            if rest is None:
                return None
            line += source.count("\n", position, rest.end())
            position = rest.end()
        elif kind == "newline":
            line += 1
            if depth == 0:
                starts.append(line)
        elif kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
            if depth < 0:
                return None
        elif kind == "continued":
            line += 1
            if source[position:position + 200].lstrip(" \t")[:1] in ("", "#", "\n"):
                return None  # continued into a blank or comment line: where it ends is ast's call
    if depth:
        return None
    # [first line, first line of its last logical line, simple]
    statements: list[list] = []
    decorated = False
    for number in starts:
        if number >= len(lines):
            break
        text = lines[number]
        stripped = text.lstrip(" \t")
        if not stripped.strip() or stripped[0] == "#":
            continue  # blank or comment: part of no statement
        if stripped[0] == "\\":
            return None  # a line that only continues into the next: its indentation is the next one's
        if text[0] in " \t":  # indented: the body of the compound statement above
            if not statements or statements[-1][2] or decorated:
                return None
            statements[-1][1] = number
        elif _CLAUSE_START.match(text):  # else/elif/except/finally of the statement above
            if not statements or statements[-1][2] or decorated:
                return None
            statements[-1][1] = number
        elif _SOFT_KEYWORD.match(text):
            return None  # a statement or a name: only a parser can tell
        elif decorated:
            statements[-1][1] = number
        else:
            statements.append([number, number, _COMPOUND_START.match(text) is None])
        decorated = text.startswith("@")
    if decorated:
        return None
    # A statement ends where the logical line after its last one starts.
    following = {number: after for number, after in zip(starts, starts[1:] + [len(lines)])}
    return [(first, following[last], simple) for first, last, simple in statements]


def _has_code(text: str) -> bool:
    return any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines())


class BlockSplitter:
    """Splits successive versions of one document, splitting again only the blocks
    an edit touched (the rest are shifted). Falls back to a full split when the
    touched region does not split on its own; a region that splits but does not
    parse fails its block's parse, and the engine then splits the whole source
    `exactly` (engine.lint_blocks)."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._blocks: list[Block] = []

    def split(self, source: str, exactly: bool = False) -> list[Block]:
        """`exactly`: the whole source, by Python's parser (see split_blocks)."""
        new_lines = source_lines(source)
        blocks = self._incremental(new_lines) if self._blocks and not exactly else None
        if blocks is None:
            blocks = split_blocks(source, exactly)
        self._lines, self._blocks = new_lines, blocks
        return blocks

    def _incremental(self, new_lines: list[str]) -> list[Block] | None:
        old_lines, old_blocks = self._lines, self._blocks
        if new_lines == old_lines:
            return old_blocks
        limit = min(len(old_lines), len(new_lines))
        prefix = 0
        while prefix < limit and old_lines[prefix] == new_lines[prefix]:
            prefix += 1
        suffix = 0
        while (suffix < limit - prefix
               and old_lines[len(old_lines) - 1 - suffix] == new_lines[len(new_lines) - 1 - suffix]):
            suffix += 1
        changed_end_old = len(old_lines) - suffix  # first unchanged line after the edit (old numbering)
        # Blocks that merely touch the edit are re-split too: an added line at
        # the end of a function, or a decorator added before one, belongs to them.
        before = [b for b in old_blocks if b.start_line + b.lines() < prefix]
        after = [b for b in old_blocks if b.start_line > changed_end_old and b.start_line > prefix]
        region_start = before[-1].start_line + before[-1].lines() if before else 0
        region_end_old = after[0].start_line if after else len(old_lines)
        delta = len(new_lines) - len(old_lines)
        region_end_new = region_end_old + delta
        if region_end_new < region_start:
            return None
        region = "".join(new_lines[region_start:region_end_new])
        if region:
            try:
                middle = [b.shifted(region_start) for b in split_blocks(region)]
            except SourceSyntaxError:
                return None
        else:
            middle = []
        if any(not _has_code(b.text) for b in middle):
            return None  # blank lines or comments alone belong to a neighbour, which a full split decides
        if after and middle and not middle[-1].text.endswith(("\n", "\r")):
            return None  # the region ends mid-line: cannot happen with whole-line edits
        blocks = before + middle + [b.shifted(delta) for b in after]
        # The edit may have opened or closed a run across the region's edges.
        edges = [len(before) - 1, len(before) + len(middle) - 1]
        if any(0 <= i < len(blocks) - 1 and blocks[i].joins(blocks[i + 1]) for i in edges):
            return None
        return blocks
