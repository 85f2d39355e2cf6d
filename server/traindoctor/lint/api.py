"""The lint engine's public face: text or files in, Findings or one-line errors out."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..config import Config, load_config
from ..model import Finding, Position, Range, TextEdit
from .blocks import SourceSyntaxError, source_lines
from .engine import LintCache, LintError, collector_paused, ignores_file, lint_blocks

# Larger files are generated code or data, not training scripts; parsing them
# would stall the editor.
MAX_BYTES = 2_000_000  # of code: what is parsed
MAX_NOTEBOOK_BYTES = 64_000_000  # of a whole .ipynb, embedded outputs included (its code must fit MAX_BYTES)


@dataclass(frozen=True)
class LintResult:
    path: str
    findings: tuple[Finding, ...] = ()
    error: str | None = None  # why the file could not be linted, one line
    # Where the error is, when it has a place: the 1-based line (of the cell, in a notebook).
    error_line: int | None = None
    error_cell: int | None = None
    # The error is not in the file but in its configuration or in writing fixes back:
    # `check` then exits 2 (a file that cannot be read or parsed is a finding instead).
    fatal: bool = False


_DERIVED_CLASS = re.compile(r"^class \w+\(\w", re.MULTILINE)
_TRAINING_CALLS = re.compile(r"\.(?:backward|zero_grad|eval|train|step)\(")


def _might_have_findings(source: str, project=None) -> bool:
    """Every rule is about PyTorch training code: no torch, nothing to do. With the project's
    facts, a file that star-imports a project module may get torch from it (`from utils import *`
    binding `torch`, `nn`, `F`), and a class deriving from a class of a sibling module may be a
    model (`from .kernel import Kernel`, a project nn.Module), and a file that trains through project helpers
    (`loss = compute_loss(model, batch)`, `loss.backward()`, `evaluate(model)`) names no torch at all."""
    if "torch" in source:
        return True
    return project is not None and ("import *" in source or _TRAINING_CALLS.search(source) is not None or (
        "from ." in source and _DERIVED_CLASS.search(source) is not None))


def lint_source(
    source: str,
    path: str = "<string>",
    config: Config | None = None,
    cache: LintCache | None = None,
    project=None,
) -> LintResult:
    """`project`: the project index (or facts) the file's imports resolve through (engine.lint_blocks)."""
    if config is None:
        config = load_config(path) if path and not path.startswith("<") else Config()
    if "\x00" in source:
        return LintResult(path, error="binary content (NUL bytes), not Python source")
    if len(source) > MAX_BYTES:
        return LintResult(path, error=f"too large to lint ({len(source) / 1e6:.1f} MB > {MAX_BYTES / 1e6:.0f} MB)")
    if not _might_have_findings(source, project) or ignores_file(source):
        return LintResult(path)
    try:
        with collector_paused():
            findings = lint_blocks(source, path, config, cache or LintCache(), project)
    except (SourceSyntaxError, LintError) as exc:
        if "torch" not in source:
            return LintResult(path)  # linted only for what the project may lend it: no claim to make on it
        if isinstance(exc, LintError):
            return LintResult(path, error=str(exc))
        where = f" at line {exc.line}" if exc.line else ""
        return LintResult(path, error=f"syntax error{where}: {exc}", error_line=exc.line)
    except RecursionError:
        return LintResult(path, error="too deeply nested to lint")
    return LintResult(path, tuple(findings))


def read_source(path: Path, limit: int = MAX_BYTES) -> str:
    """The file's text, or LintError with a one-line reason."""
    try:
        size = path.stat().st_size
        if size > limit:
            raise LintError(f"too large to lint ({size / 1e6:.1f} MB > {limit / 1e6:.0f} MB)")
        data = path.read_bytes()
    except OSError as exc:
        raise LintError(f"cannot read: {exc.strerror or exc}") from None
    if b"\x00" in data:
        raise LintError("binary file, not Python source")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LintError(f"not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


def lint_file(path: str | Path, config: Config | None = None) -> LintResult:
    path = Path(path)
    try:
        source = read_source(path)
    except LintError as exc:
        return LintResult(str(path), error=str(exc))
    return lint_source(source, str(path), config if config is not None else load_config(path))


# --- fixes -----------------------------------------------------------------------


def _line_starts(source: str) -> list[int]:
    starts = [0]
    for line in source_lines(source):
        starts.append(starts[-1] + len(line))
    return starts


def _offset(starts: list[int], pos: Position) -> int:
    line = min(pos.line, len(starts) - 1)
    return min(starts[line] + pos.column, starts[-1])


def apply_edits(source: str, edits: Iterable[TextEdit]) -> str:
    """Apply non-overlapping edits (positions refer to `source`)."""
    starts = _line_starts(source)
    spans = sorted(((_offset(starts, e.range.start), _offset(starts, e.range.end), e.new_text) for e in edits),
                   reverse=True)
    out = source
    for start, end, text in spans:
        out = out[:start] + text + out[end:]
    return out


def apply_fixes(source: str, findings: Iterable[Finding], *, safe_only: bool = True) -> str:
    """Apply the fixes of `findings` to `source`; a fix whose edits overlap an
    earlier one is left for the next round (see `fix_source`)."""
    starts = _line_starts(source)
    taken: list[tuple[int, int]] = []
    accepted: list[TextEdit] = []
    for finding in sorted(findings, key=lambda f: f.range):
        fix = finding.fix
        if fix is None or (safe_only and not fix.safe):
            continue
        spans = [(_offset(starts, e.range.start), _offset(starts, e.range.end)) for e in fix.edits]
        if any(_overlaps(span, other) for span in spans for other in taken):
            continue
        taken.extend(spans)
        accepted.extend(fix.edits)
    return apply_edits(source, accepted)


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    if a[0] == a[1] or b[0] == b[1]:  # insertions collide only at the same point or inside
        return a[0] == b[0] or (b[0] < a[0] < b[1]) or (a[0] < b[0] < a[1])
    return a[0] < b[1] and b[0] < a[1]


def fix_source(source: str, path: str = "<string>", config: Config | None = None,
               *, max_rounds: int = 8, unsafe: bool = False, project=None) -> tuple[str, int]:
    """Apply every safe fix (and the unsafe ones when `unsafe`) until none is
    left. Returns the new text and the number of fixes applied. A round whose
    result would not parse is dropped."""
    applied = 0
    cache = LintCache()
    wanted = (lambda f: f.fix is not None and (unsafe or f.fix.safe))  # noqa: E731
    for _ in range(max_rounds):
        result = lint_source(source, path, config, cache, project)
        fixable = [f for f in result.findings if wanted(f)]
        if result.error or not fixable:
            break
        fixed = apply_fixes(source, fixable, safe_only=not unsafe)
        if fixed == source or not _parses(fixed):
            break
        remaining = len([f for f in lint_source(fixed, path, config, cache, project).findings if wanted(f)])
        applied += max(len(fixable) - remaining, 1)
        source = fixed
    return source, applied


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def suppression_edit(source: str, finding: Finding) -> TextEdit:
    """The edit that adds `# traindoctor: ignore[CODE]` to the finding's line
    (or extends an existing one), chosen so that the result still parses."""
    lines = source_lines(source)
    candidates = [finding.range.start.line, finding.range.end.line]
    fallback: TextEdit | None = None
    for number in candidates:
        if number >= len(lines):
            continue
        line = lines[number]
        body = line.rstrip("\r\n")
        existing = _existing_ignore(body)
        if existing is not None:
            start, end, codes = existing
            if finding.code not in codes:
                codes.append(finding.code)
            edit = TextEdit(Range(Position(number, start), Position(number, end)),
                            f"# traindoctor: ignore[{', '.join(codes)}]")
        else:
            edit = TextEdit(Range(Position(number, len(body)), Position(number, len(body))),
                            f"  # traindoctor: ignore[{finding.code}]")
        fallback = fallback or edit
        if not body.rstrip().endswith("\\") and _parses(apply_edits(source, [edit])):
            return edit
    if fallback is None:
        raise ValueError("finding is outside the source")
    return fallback


def _existing_ignore(line: str) -> tuple[int, int, list[str]] | None:
    import re

    match = re.search(r"#\s*traindoctor:\s*ignore\[([^\]]*)\]", line)
    if match is None:
        return None
    codes = [c.strip().upper() for c in match.group(1).split(",") if c.strip()]
    return match.start(), match.end(), codes
