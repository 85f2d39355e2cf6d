"""Jupyter notebooks as one program: the code cells in order, as they run.

The lint engine only knows Python text. A notebook becomes one program: each code
cell, behind a marker comment line, with IPython syntax (`%magic`, `%%cell magic`,
`!shell`, `obj?`) replaced by a placeholder of the same number of lines. Findings
are mapped back to (cell, line within the cell); a fixed program is split back into
cell sources, magics restored. The CLI and the language server both use this module.

Cells are numbered 1-based among all cells of the notebook (markdown included), so
"cell 3" is the third cell you scroll past.
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Sequence

from ..config import Config
from ..model import Finding, Range
from .api import MAX_NOTEBOOK_BYTES, LintResult, fix_source, lint_source, read_source
from .blocks import source_lines
from .diff import unified_diff
from .engine import LintCache, LintError

NOTEBOOK_SUFFIX = ".ipynb"

# One line before every cell. A constant text keeps each cell's blocks (and their
# cache entries) the same when cells above are added or removed.
_CELL_MARKER = "# traindoctor: notebook cell\n"
_MAGIC_PLACEHOLDER = "pass  # traindoctor: ipython syntax"
# Cell magics whose body is Python; any other `%%magic` cell (bash, html, writefile...) is not.
_PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug"}
_HELP = re.compile(r"^(\?{1,2}[A-Za-z_][\w.]*|[A-Za-z_][\w.]*\?{1,2})$")  # `?torch.nn`, `nn.Linear??`
_ASSIGNED_MAGIC = re.compile(r"^\s*[A-Za-z_][\w.]*(\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[%!]")


@dataclass(frozen=True)
class CellSpan:
    number: int  # 1-based among all cells of the notebook
    first_line: int  # 0-based line of the cell's first line in the program
    line_count: int
    ends_with_newline: bool
    magics: tuple[str, ...]  # original text of the lines replaced by placeholders, in order

    def holds(self, line: int) -> bool:
        return self.first_line <= line < self.first_line + max(self.line_count, 1)


@dataclass(frozen=True)
class NotebookProgram:
    text: str
    cells: tuple[CellSpan, ...]

    def cell_at(self, line: int) -> CellSpan | None:
        for cell in self.cells:
            if cell.holds(line):
                return cell
        return None

    def cell(self, number: int) -> CellSpan | None:
        return next((c for c in self.cells if c.number == number), None)

    def to_cells(self, findings: Iterable[Finding]) -> tuple[Finding, ...]:
        """Program findings -> findings with `cell` set and ranges within that cell.
        A fix or related location that reaches into another cell is dropped from
        the cell's view (the program-level fix in `fix_cells` still applies it)."""
        out = []
        for finding in findings:
            cell = self.cell_at(finding.range.start.line)
            if cell is None:
                continue
            shift = -cell.first_line
            fix = finding.fix
            if fix is not None and not all(self._within(cell, e.range) for e in fix.edits):
                fix = None
            related = tuple(r.shifted(shift) for r in finding.related
                            if r.path is None and self._within(cell, r.range))
            out.append(replace(finding, range=finding.range.shifted(shift), cell=cell.number,
                               fix=fix.shifted(shift) if fix is not None else None, related=related))
        return tuple(out)

    def _within(self, cell: CellSpan, rng: Range) -> bool:
        last = cell.first_line + cell.line_count
        return cell.first_line <= rng.start.line and (rng.end.line < last or (rng.end.line == last
                                                                                 and rng.end.column == 0))

    def split(self, text: str) -> dict[int, str] | None:
        """A (fixed) program -> {cell number: source}, magics restored. None when the
        program no longer has the shape of this notebook (a marker or placeholder lost)."""
        parts = text.split(_CELL_MARKER)
        if len(parts) != len(self.cells) + 1 or parts[0]:
            return None
        out = {}
        for cell, body in zip(self.cells, parts[1:]):
            lines = source_lines(body)
            magics = iter(cell.magics)
            restored = []
            for line in lines:
                if line.rstrip("\r\n").strip() == _MAGIC_PLACEHOLDER:
                    original = next(magics, None)
                    if original is None:
                        return None
                    restored.append(original)
                else:
                    restored.append(line)
            if next(magics, None) is not None:
                return None
            source = "".join(restored)
            if not cell.ends_with_newline and source.endswith("\n"):
                source = source[:-1]
            out[cell.number] = source
        return out


def _line_ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")):]


def _is_line_magic(stripped: str) -> bool:
    if stripped.startswith(("%", "!")) or _HELP.match(stripped):
        return True
    return bool(_ASSIGNED_MAGIC.match(stripped))


def _python_lines(source: str) -> tuple[list[str], list[str]]:
    """A cell's lines with IPython syntax replaced, and the replaced originals. A cell
    that is valid Python as it stands is left alone (a `%` or `?` inside a string is not
    IPython syntax)."""
    lines = source_lines(source)
    try:
        ast.parse(source)
        return lines, []
    except (SyntaxError, ValueError):
        pass
    out: list[str] = []
    magics: list[str] = []

    def blank(line: str, indent: str = "") -> None:
        magics.append(line)
        out.append(indent + _MAGIC_PLACEHOLDER + (_line_ending(line) or ""))

    in_string = _lines_inside_strings(source)
    first = next((line.strip() for line in lines if line.strip()), "")
    cell_magic = first[2:].split(maxsplit=1)[0] if first.startswith("%%") and len(first) > 2 else None
    whole_cell = first.startswith("%%") and cell_magic not in _PYTHON_CELL_MAGICS
    continuing = False
    for index, line in enumerate(lines):
        stripped = line.strip()
        if whole_cell or continuing or (first.startswith("%%") and stripped == first and index == _first_index(lines)):
            blank(line)
        elif index not in in_string and _is_line_magic(stripped):
            blank(line, line[: len(line) - len(line.lstrip())])
        else:
            out.append(line)
            continuing = False
            continue
        continuing = line.rstrip("\r\n").endswith("\\")
    return out, magics


def _lines_inside_strings(source: str) -> set[int]:
    """0-based lines that continue a multi-line string (never IPython syntax there)."""
    inside: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                inside.update(range(token.start[0], token.end[0]))  # rows after the first, 0-based
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return inside


def _first_index(lines: list[str]) -> int:
    return next((i for i, line in enumerate(lines) if line.strip()), 0)


def program_from_cells(cells: Sequence[tuple[int, str]]) -> NotebookProgram:
    """(cell number, source) of the code cells, in order -> the program."""
    parts: list[str] = []
    spans: list[CellSpan] = []
    line = 0
    for number, source in cells:
        lines, magics = _python_lines(source)
        ends_with_newline = source.endswith("\n")
        if lines and not ends_with_newline:
            lines[-1] += "\n"
        parts.append(_CELL_MARKER)
        parts.extend(lines)
        spans.append(CellSpan(number, line + 1, len(lines), ends_with_newline, tuple(magics)))
        line += 1 + len(lines)
    return NotebookProgram("".join(parts), tuple(spans))


# --- .ipynb files ---------------------------------------------------------------


@dataclass(frozen=True)
class NotebookFile:
    raw: str  # the file's text, exactly as read
    code_cells: tuple[tuple[int, str], ...]  # (cell number, source) of the Python code cells
    language: str


def parse_notebook(raw: str) -> NotebookFile:
    """Read and validate with nbformat; LintError with a one-line reason otherwise."""
    import nbformat

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. missing cell ids: nbformat adds them in memory
            notebook = nbformat.reads(raw, as_version=4)
            nbformat.validate(notebook)
    except nbformat.ValidationError as exc:
        raise LintError(f"not a valid notebook: {str(exc.message).splitlines()[0]}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LintError(f"not a notebook: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    metadata = notebook.get("metadata", {})
    language = (metadata.get("language_info", {}).get("name")
                or metadata.get("kernelspec", {}).get("language") or "python")
    cells = tuple((index + 1, cell.source) for index, cell in enumerate(notebook.cells)
                  if cell.cell_type == "code")
    return NotebookFile(raw, cells if language.lower() == "python" else (), language)


def _shape_error(error: str, program: NotebookProgram) -> str:
    """`syntax error at line 17` (program) -> `syntax error in cell 4 at line 2`."""
    match = re.search(r" at line (\d+)", error)
    cell = program.cell_at(int(match.group(1)) - 1) if match else None
    if cell is None:
        return error
    return error.replace(match.group(0), f" in cell {cell.number} at line {int(match.group(1)) - cell.first_line}")


def lint_notebook_program(program: NotebookProgram, path: str, config: Config,
                          cache: LintCache | None = None, *, skip_broken_cells: bool = False) -> LintResult:
    """Lint the program; findings come back per cell. With `skip_broken_cells` (the
    editor, where one cell is often half-typed) a cell that does not parse is left
    out and the others are still linted; the error names the first such cell."""
    result = lint_source(program.text, path, config, cache)
    if not result.error:
        return LintResult(path, program.to_cells(result.findings))
    error = _shape_error(result.error, program)
    if not skip_broken_cells:
        cell = program.cell_at(result.error_line - 1) if result.error_line else None
        if cell is None:
            return LintResult(path, error=error)
        return LintResult(path, error=error, error_line=result.error_line - cell.first_line, error_cell=cell.number)
    text = program.text
    for _ in range(8):
        match = re.search(r" at line (\d+)", result.error or "")
        cell = program.cell_at(int(match.group(1)) - 1) if match else None
        if cell is None:
            return LintResult(path, error=error)
        lines = source_lines(text)
        for i in range(cell.first_line, cell.first_line + cell.line_count):
            lines[i] = _MAGIC_PLACEHOLDER + "\n"
        text = "".join(lines)
        result = lint_source(text, path, config, cache)
        if not result.error:
            return LintResult(path, program.to_cells(result.findings), error=error)
    return LintResult(path, error=error)


def check_notebook(path: Path, config: Config, mode: str) -> tuple[LintResult, str, int]:
    """`check` of one .ipynb: mode "lint", "fix" (write the cells back) or "diff".
    Returns the result (findings per cell), the diff text and the number of fixes."""
    name = str(path)
    try:
        notebook = parse_notebook(read_source(path, MAX_NOTEBOOK_BYTES))  # images do not count: its code does
    except LintError as exc:
        return LintResult(name, error=str(exc)), "", 0
    program = program_from_cells(notebook.code_cells)
    if mode == "lint" or not notebook.code_cells:
        return lint_notebook_program(program, name, config), "", 0
    fixed_text, count = fix_source(program.text, name, config)
    new_sources = program.split(fixed_text) if fixed_text != program.text else None
    diff = ""
    if new_sources is None and fixed_text != program.text:
        return LintResult(name, error="the fixes would change the notebook's cell structure; not applied",
                          fatal=True), "", 0
    old_sources = dict(notebook.code_cells)
    changed = {n: s for n, s in (new_sources or {}).items() if s != old_sources[n]}
    if changed and mode == "fix":
        try:
            path.write_text(replace_cell_sources(notebook.raw, changed), encoding="utf-8", newline="")
        except OSError as exc:
            return LintResult(name, error=f"cannot write fixes: {exc.strerror or exc}", fatal=True), "", 0
        except ValueError as exc:
            return LintResult(name, error=f"cannot write fixes: {exc}", fatal=True), "", 0
        program = program_from_cells([(n, changed.get(n, s)) for n, s in notebook.code_cells])
    elif changed:
        def lines(source: str) -> list[str]:  # a cell's last line has no newline: add one for the diff
            return source_lines(source if source.endswith("\n") else source + "\n")

        diff = "".join(
            unified_diff(lines(old_sources[n]), lines(s), name, where=f":cell {n}")
            for n, s in sorted(changed.items())
        )
    return lint_notebook_program(program, name, config), diff, count if changed else 0


# --- writing cell sources back without touching anything else -------------------

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, i: int) -> int:
    return _WS.match(text, i).end()


def _members(text: str, i: int) -> Iterable[tuple[str, int, int]]:
    """(key, value start, value end) of the JSON object starting at text[i]."""
    if text[i] != "{":
        raise ValueError("expected an object")
    i = _skip_ws(text, i + 1)
    if text[i] == "}":
        return
    while True:
        if text[i] != '"':
            raise ValueError("expected a key")
        key, i = json.decoder.scanstring(text, i + 1)
        i = _skip_ws(text, i)
        if text[i] != ":":
            raise ValueError("expected ':'")
        start = _skip_ws(text, i + 1)
        _, end = _DECODER.raw_decode(text, start)
        yield key, start, end
        i = _skip_ws(text, end)
        if text[i] == "}":
            return
        if text[i] != ",":
            raise ValueError("expected ',' or '}'")
        i = _skip_ws(text, i + 1)


def _elements(text: str, i: int) -> Iterable[tuple[int, int]]:
    """(start, end) of each element of the JSON array starting at text[i]."""
    if text[i] != "[":
        raise ValueError("expected an array")
    i = _skip_ws(text, i + 1)
    if text[i] == "]":
        return
    while True:
        _, end = _DECODER.raw_decode(text, i)
        yield i, end
        i = _skip_ws(text, end)
        if text[i] == "]":
            return
        if text[i] != ",":
            raise ValueError("expected ',' or ']'")
        i = _skip_ws(text, i + 1)


def source_spans(raw: str) -> list[tuple[int, int]]:
    """(start, end) offsets in the raw file of each cell's `source` value, in cell order."""
    top = _skip_ws(raw, 0)
    cells = next(((s, e) for key, s, e in _members(raw, top) if key == "cells"), None)
    if cells is None:
        raise ValueError("no cells")
    spans = []
    for start, _end in _elements(raw, cells[0]):
        span = next(((s, e) for key, s, e in _members(raw, start) if key == "source"), None)
        if span is None:
            raise ValueError("a cell without source")
        spans.append(span)
    return spans


def _render_source(old_value: str, source: str, ascii_only: bool) -> str:
    """`source` as JSON, in the layout of the value it replaces (a list of lines
    one per row, as nbformat writes, or one string)."""
    def dump(s: str) -> str:
        return json.dumps(s, ensure_ascii=ascii_only)

    if old_value.startswith('"'):
        return dump(source)
    lines = source.splitlines(keepends=True)
    if not lines:
        return "[]"
    match = re.match(r"\[(\s*)", old_value)
    separator = match.group(1) if match and match.group(1) else ""
    closing = re.search(r"(\s*)\]$", old_value).group(1) if separator else ""
    return "[" + separator + ("," + separator).join(dump(line) for line in lines) + closing + "]"


def replace_cell_sources(raw: str, sources: dict[int, str]) -> str:
    """The raw notebook with the `source` of the given cells (1-based) replaced; every
    other byte stays as it was."""
    spans = source_spans(raw)
    ascii_only = raw.isascii()
    out = raw
    for number in sorted(sources, reverse=True):
        start, end = spans[number - 1]
        old = json.loads(raw[start:end])
        if ("".join(old) if isinstance(old, list) else old) == sources[number]:
            continue
        out = out[:start] + _render_source(raw[start:end], sources[number], ascii_only) + out[end:]
    return out


# --- where a cell line is in the .ipynb file (for SARIF and CI annotations) -------


def file_position(raw: str, cell_number: int, line: int, column: int) -> tuple[int, int]:
    """(0-based line, 0-based column) in the .ipynb text of a cell position, so that a
    code-scanning alert or a PR annotation lands on the line that holds the code."""
    try:
        start, end = source_spans(raw)[cell_number - 1]
    except (ValueError, IndexError):
        return 0, 0
    value = raw[start:end]
    if value.startswith("["):
        elements = list(_elements(raw, start))
        if line < len(elements):
            start = elements[line][0]
            text = json.loads(raw[start:elements[line][1]])
            offset = start + 1 + len(json.dumps(text[:column], ensure_ascii=raw.isascii())) - 2
        else:
            offset = start
    else:
        text = json.loads(value)
        prefix = "".join(source_lines(text)[:line]) + source_lines(text)[min(line, len(source_lines(text)) - 1)][:column]
        offset = start + 1 + len(json.dumps(prefix, ensure_ascii=raw.isascii())) - 2
    row = raw.count("\n", 0, offset)
    return row, offset - (raw.rfind("\n", 0, offset) + 1)


def is_notebook(path: str | Path) -> bool:
    return str(path).endswith(NOTEBOOK_SUFFIX)


__all__ = [
    "CellSpan", "NotebookFile", "NotebookProgram", "check_notebook", "file_position", "is_notebook",
    "lint_notebook_program", "parse_notebook", "program_from_cells", "replace_cell_sources", "source_spans",
]
