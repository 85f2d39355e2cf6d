"""Run the detectors of rules/monitors over a run and turn their hits into Diagnoses.

A finding is a `Diagnosis` (the shape `diagnose` and `run` emit) plus the step
it happened at: `Finding.to_json()` is `Diagnosis.to_json()` with `"step"`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..diagnose.references import references_for
from ..diagnose.signatures import fix_suggestions
from ..model import Diagnosis, Finding, Frame
from .detectors import DETECTORS, Hit
from .rules import MonitorRule, load_monitor_rules
from .series import RunData


@dataclass(frozen=True)
class StepFinding:
    diagnosis: Diagnosis
    step: int | None

    def to_json(self) -> dict[str, Any]:
        return {**self.diagnosis.to_json(), "step": self.step}


def user_files(run: RunData) -> list[Path]:
    """The user's files the run went through (where it stepped, backpropagated, built loaders)."""
    sites = [run.meta.get("step_site"), run.meta.get("backward_site")]
    sites += [loader.get("site") for loader in run.meta.get("loaders") or [] if isinstance(loader, dict)]
    files: list[Path] = []
    for site in sites:
        if isinstance(site, dict) and site.get("path"):
            path = Path(site["path"])
            if path.is_file() and path not in files:
                files.append(path)
    return files


class LintCache:
    """Each user file linted once per report, whatever the number of detectors asking."""

    def __init__(self, files: list[Path]) -> None:
        self.files = files

    @functools.cached_property
    def findings(self) -> list[Finding]:
        from ..lint import lint_file  # late: curves and plain runs must not pay for libcst

        out: list[Finding] = []
        for path in self.files:
            try:
                out.extend(lint_file(path).findings)
            except Exception:  # a lint bug must not hide the runtime finding
                continue
        return out

    def with_prefixes(self, prefixes: tuple[str, ...]) -> list[Finding]:
        if not prefixes:
            return []
        return [f for f in self.findings if f.code.startswith(prefixes)]


def build(rule: MonitorRule, hit: Hit) -> StepFinding:
    facts = hit.facts
    if hit.related:  # the lint line, for the fixes that edit it (`at: finding_place`)
        facts = {"finding_place": f"{hit.related[0].path}:{hit.related[0].range.start.line + 1}", **facts}
    frames: tuple[Frame, ...] = (hit.location,) if hit.location is not None else ()
    details = {"detector": rule.id, "step": hit.step, "facts": {k: v for k, v in facts.items() if v is not None},
               **hit.details}
    cause = None
    if hit.related:
        first = hit.related[0]
        line = first.range.start.line + 1
        details["line_to_change"] = {"path": first.path, "line": line, "code": first.code}
        if hit.location is None or (hit.location.path, hit.location.line) != (first.path, line):
            # the line that explains the run (the accumulating total, the unsafe log) is not where it stepped
            cause = {"path": first.path, "line": line, "code": _source_line(first.path, line),
                     "why": f"{first.code}: {first.message}"}
    fixes = tuple(fix_suggestions(rule.fixes, facts))
    diagnosis = Diagnosis(
        kind=rule.kind, mode=rule.mode, title=rule.title_for(facts), root_cause=rule.root_cause_for(facts),
        evidence=tuple(rule.evidence_for(facts)), fixes=fixes,
        confidence=rule.confidence, location=hit.location, frames=frames, exception=None,
        related_findings=hit.related, details=details, cause_location=cause,
        references=tuple(references_for(rule.kind, [f.title for f in fixes])),
    )
    return StepFinding(diagnosis, hit.step)


def _source_line(path: str, line: int) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace").splitlines()[line - 1].strip()
    except (OSError, IndexError):
        return ""


def detect(run: RunData, source: str, *, only: tuple[str, ...] | None = None,
           lint: LintCache | None = None) -> list[StepFinding]:
    """Every detector of `source` (watch, curves, overfit, repro) over the run, ordered by step."""
    lint = lint or LintCache(user_files(run))
    out: list[StepFinding] = []
    for rule in load_monitor_rules().values():
        if source not in rule.sources or (only is not None and rule.id not in only):
            continue
        function = DETECTORS.get(rule.id)
        if function is None:
            continue
        provider: Callable[[], list[Finding]] = functools.partial(lint.with_prefixes, rule.related_rules)
        for hit in function(run, rule.params, provider):
            if not hit.related and not hit.linked and rule.related_rules and run.source != "curves" \
                    and rule.id != "memory-leak":
                hit = Hit(hit.step, hit.facts, hit.location, tuple(provider()), hit.details)
            out.append(build(rule, hit))
    out.sort(key=lambda f: (f.step is None, f.step or 0))
    return out


def render_finding(finding: StepFinding) -> str:
    d = finding.diagnosis
    lines = [f"step {finding.step}: {d.title}" if finding.step is not None else d.title]
    if d.rank is not None:
        lines[0] = f"rank {d.rank}" + (", " if finding.step is not None else ": ") + lines[0]
    if d.location is not None:
        lines.append(f"  at {d.location.path}:{d.location.line}" + (f": {d.location.code}" if d.location.code else ""))
    if d.cause_location:
        cause = d.cause_location
        lines.append(f"  cause at {cause['path']}:{cause['line']}" + (f": {cause['code']}" if cause.get("code") else ""))
    if d.root_cause:
        lines.append(f"  {d.root_cause}")
    lines += [f"  - {e}" for e in d.evidence]
    for i, fix in enumerate(d.fixes, 1):
        lines.append(f"  {i}. {fix.title}" + (f": {fix.detail}" if fix.detail else ""))
    for related in d.related_findings[:3]:
        lines.append(f"  lint {related.code} at {related.path}:{related.range.start.line + 1}: {related.message}")
    lines += [f"  see {ref.get('title')}: {ref.get('url')}" for ref in d.references[:3]]
    return "\n".join(lines)
