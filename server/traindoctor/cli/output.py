"""Finding renderers for `check`: text for people, JSON, SARIF and GitHub for CI.

A fix is "safe" (applied by --fix) or "unsafe" (it may change behaviour; applied
only with --unsafe-fixes), as in Ruff. `[*]` marks a finding whose fix the
current options would apply.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from .. import __version__
from ..catalog import load_rules
from ..model import Finding, Position, Range, Severity

if TYPE_CHECKING:
    from ..lint.api import LintResult

# A file that cannot be read or parsed is a finding, as Ruff's syntax errors are: it
# fails the run (exit 1), has a place, and shows in JSON, SARIF and annotations. It is
# not a rule, so --select/--ignore do not drop it.
UNLINTABLE_CODE, UNLINTABLE_NAME = "TRN000", "file-not-linted"

_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note", Severity.HINT: "note"}
_GITHUB_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice",
                 Severity.HINT: "notice"}


def _paint(text: str, code: str, color: bool) -> str:
    return f"\033[{code}m{text}\033[0m" if color else text


def applicability(finding: Finding) -> str | None:
    """"safe", "unsafe", or None without a fix."""
    if finding.fix is None:
        return None
    return "safe" if finding.fix.safe else "unsafe"


def _applies(finding: Finding, unsafe: bool) -> bool:
    """Whether `--fix` (with `--unsafe-fixes` when `unsafe`) would apply this finding's fix."""
    return finding.fix is not None and (finding.fix.safe or unsafe)


def unlintable(result: "LintResult") -> Finding:
    """The TRN000 finding for a file `check` could not lint, at the error's line."""
    line = max((result.error_line or 1) - 1, 0)
    return Finding(UNLINTABLE_CODE, UNLINTABLE_NAME, "crash", Severity.ERROR, f"cannot lint: {result.error}",
                   result.path, Range.of(line, 0, line, 0), cell=result.error_cell)


def text(findings: Iterable[Finding], *, color: bool = False, unsafe: bool = False) -> Iterable[str]:
    for f in findings:
        where = f"{_cell_prefix(f)}{f.range.start.line + 1}:{f.range.start.column + 1}:"
        code = _paint(f.code, "1;31" if f.severity is Severity.ERROR else "1;33", color)
        fixable = " [*]" if _applies(f, unsafe) else ""
        yield f"{_paint(where, '1', color)} {code} {f.message}{fixable}"


def summary(findings: list[Finding], *, files: int, errors: int, fixed: int, color: bool = False,
            unsafe: bool = False) -> str:
    fixable = sum(1 for f in findings if _applies(f, unsafe))
    hidden = sum(1 for f in findings if f.fix is not None and not _applies(f, unsafe))
    parts = []
    if fixed:
        parts.append(f"Fixed {fixed} problem{'s' * (fixed != 1)}.")
    if findings:
        with_fix = " --unsafe-fixes" if unsafe else ""
        notes = [f"{fixable} fixable with --fix{with_fix}"] if fixable else []
        if hidden:
            notes.append(f"{hidden} more with --unsafe-fixes")
        parts.append(f"Found {len(findings)} problem{'s' * (len(findings) != 1)} in {files} "
                     f"file{'s' * (files != 1)}" + (f" ({'; '.join(notes)})." if notes else "."))
    else:
        parts.append(f"No problems found in {files} file{'s' * (files != 1)}.")
    if errors:
        parts.append(f"{errors} file{'s' * (errors != 1)} had an error (above).")
    return _paint(" ".join(parts), "1", color)


def json_findings(findings: Iterable[Finding]) -> list[dict[str, Any]]:
    """The JSON list of `check --format json`: `Finding.to_json`, with the fix's applicability."""
    out = []
    for f in findings:
        entry = f.to_json()
        if entry["fix"] is not None:
            entry["fix"]["applicability"] = applicability(f)
        out.append(entry)
    return out


def _counts(findings: Iterable[Finding], unsafe: bool) -> list[tuple[str, str, int, bool]]:
    """(code, name, count, fixable) per rule, most frequent first."""
    counts: Counter[tuple[str, str]] = Counter()
    fixable: set[str] = set()
    for f in findings:
        counts[(f.code, f.name)] += 1
        if _applies(f, unsafe):
            fixable.add(f.code)
    return [(code, name, n, code in fixable)
            for (code, name), n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


def statistics(findings: Iterable[Finding], *, unsafe: bool = False) -> Iterable[str]:
    """`check --statistics`, as Ruff prints it: count, code, [*] when fixable, rule name."""
    rows = _counts(findings, unsafe)
    width = max((len(str(n)) for _, _, n, _ in rows), default=1)
    for code, name, n, fixable in rows:
        yield f"{n:>{width}}\t{code}\t{'[*]' if fixable else '[ ]'} {name}"


def statistics_json(findings: Iterable[Finding], *, unsafe: bool = False) -> list[dict[str, Any]]:
    return [{"code": code, "name": name, "count": n, "fixable": fixable}
            for code, name, n, fixable in _counts(findings, unsafe)]
# --- notebooks: findings in cells --------------------------------------------------


def _cell_prefix(f: Finding) -> str:
    """`path:` or, in a notebook, `path:cell N:` (the line and column follow, within the cell)."""
    return f"{f.path}:cell {f.cell}:" if f.cell is not None else f"{f.path}:"


def _cell_note(f: Finding) -> str:
    return f" (cell {f.cell}, line {f.range.start.line + 1})" if f.cell is not None else ""


_notebook_texts: dict[str, str] = {}


def _file_range(f: Finding) -> Range:
    """The finding's range in the file itself: for a notebook, the line of the .ipynb
    JSON that holds the code, which is where CI annotations and code scanning point."""
    if f.cell is None:
        return f.range
    from ..lint.notebook import file_position

    raw = _notebook_texts.get(f.path)
    if raw is None:
        try:
            raw = _notebook_texts[f.path] = Path(f.path).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError):
            return f.range
    start = file_position(raw, f.cell, f.range.start.line, f.range.start.column)
    end = file_position(raw, f.cell, f.range.end.line, f.range.end.column)
    return Range(Position(*start), Position(*max(start, end)))


def github(findings: Iterable[Finding]) -> Iterable[str]:
    def escape(value: str) -> str:
        return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    for f in findings:
        rng = _file_range(f)
        props = (f"file={escape(f.path)},line={rng.start.line + 1},col={rng.start.column + 1},"
                 f"endLine={rng.end.line + 1},endColumn={rng.end.column + 1},"
                 f"title={escape(f'{f.code} {f.name}{_cell_note(f)}').replace(':', '%3A').replace(',', '%2C')}")
        yield f"::{_GITHUB_LEVEL[f.severity]} {props}::{escape(f.message)}"


def sarif(findings: list[Finding]) -> dict[str, Any]:
    rules = load_rules()
    codes = sorted({f.code for f in findings} | set(rules))
    index = {code: i for i, code in enumerate(codes)}
    results = []
    for f in findings:
        rng = _file_range(f)
        result: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": f.path.replace("\\", "/")},
                    "region": {
                        "startLine": rng.start.line + 1,
                        "startColumn": rng.start.column + 1,
                        "endLine": rng.end.line + 1,
                        "endColumn": rng.end.column + 1,
                    },
                }
            }],
        }
        if f.related and f.cell is None:
            result["relatedLocations"] = [{
                "id": i,
                "message": {"text": r.message},
                "physicalLocation": {
                    "artifactLocation": {"uri": (r.path or f.path).replace("\\", "/")},
                    "region": {"startLine": r.range.start.line + 1, "startColumn": r.range.start.column + 1,
                               "endLine": r.range.end.line + 1, "endColumn": r.range.end.column + 1},
                },
            } for i, r in enumerate(f.related)]
        if f.cell is not None:
            result["properties"] = {"cell": f.cell, "cellLine": f.range.start.line + 1,
                                    "cellColumn": f.range.start.column + 1}
        if f.fix is not None and f.cell is None:  # a notebook's fix edits cells, not the file's JSON
            result["fixes"] = [{
                "description": {"text": f.fix.title},
                "properties": {"applicability": applicability(f)},
                "artifactChanges": [{
                    "artifactLocation": {"uri": f.path.replace("\\", "/")},
                    "replacements": [{
                        "deletedRegion": {
                            "startLine": e.range.start.line + 1,
                            "startColumn": e.range.start.column + 1,
                            "endLine": e.range.end.line + 1,
                            "endColumn": e.range.end.column + 1,
                        },
                        "insertedContent": {"text": e.new_text},
                    } for e in f.fix.edits],
                }],
            }]
        results.append(result)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "traindoctor",
                "version": __version__,
                "informationUri": "https://pytorch.org/docs/stable/notes/faq.html",
                "rules": [{
                    "id": code,
                    "name": rules[code].name if code in rules else code,
                    "shortDescription": {"text": rules[code].summary if code in rules else code},
                    "fullDescription": {"text": rules[code].why if code in rules else code},
                    "help": {"text": rules[code].fix if code in rules else ""},
                    "helpUri": rules[code].references[0].url if code in rules else "https://pytorch.org/docs/stable/",
                    "defaultConfiguration": {"level": _SARIF_LEVEL[rules[code].severity] if code in rules
                                             else "warning"},
                    "properties": {"failureMode": rules[code].mode if code in rules else ""},
                } for code in codes],
            }},
            "results": results,
        }],
    }
