"""Loads the runtime detectors' data from rules/monitors/*.yaml (see its README)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from ..catalog import rules_dir
from ..diagnose.signatures import SignatureError, Template, _templates
from ..model import FAILURE_MODES

SOURCES = ("watch", "curves", "overfit", "repro")


class MonitorRuleError(ValueError):
    """A detector file that does not follow the schema."""


@dataclass(frozen=True)
class MonitorRule:
    id: str
    kind: str
    mode: str
    sources: tuple[str, ...]
    confidence: float
    params: Mapping[str, Any] = field(hash=False, compare=False)
    titles: tuple[Template, ...]
    root_cause: tuple[Template, ...]
    evidence: tuple[Template, ...]
    fixes: tuple[Template, ...]
    related_rules: tuple[str, ...]
    source: Path

    def title_for(self, facts: Mapping[str, Any]) -> str:
        return next((t.render(facts)[0] for t in self.titles if t.applies(facts)), self.kind)

    def root_cause_for(self, facts: Mapping[str, Any]) -> str:
        return " ".join(t.render(facts)[0] for t in self.root_cause if t.applies(facts))

    def evidence_for(self, facts: Mapping[str, Any]) -> list[str]:
        return [t.render(facts)[0] for t in self.evidence if t.applies(facts)]

    def fixes_for(self, facts: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [t.render(facts) for t in self.fixes if t.applies(facts)]


def _parse(path: Path) -> MonitorRule:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise MonitorRuleError(f"{path.name}: invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise MonitorRuleError(f"{path.name}: expected a mapping")
    rid = str(data.get("id") or "")
    if rid != path.stem:
        raise MonitorRuleError(f"{path.name}: id {rid!r} must match the file name")
    mode = str(data.get("mode") or "")
    if mode not in FAILURE_MODES:
        raise MonitorRuleError(f"{path.name}: unknown failure mode {mode!r}")
    sources = tuple(str(s) for s in data.get("sources") or ())
    if not sources or any(s not in SOURCES for s in sources):
        raise MonitorRuleError(f"{path.name}: sources must be a non-empty subset of {SOURCES}")
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise MonitorRuleError(f"{path.name}: params must be a mapping")
    try:
        titles = _templates(data.get("title"), f"{path.name}:title")
        root_cause = _templates(data.get("root_cause"), f"{path.name}:root_cause")
        evidence = _templates(data.get("evidence"), f"{path.name}:evidence")
        fixes = _templates(data.get("fixes"), f"{path.name}:fixes", fix=True)
    except SignatureError as exc:
        raise MonitorRuleError(str(exc)) from None
    if not titles:
        raise MonitorRuleError(f"{path.name}: needs at least one title")
    return MonitorRule(
        id=rid, kind=str(data.get("kind") or rid), mode=mode, sources=sources,
        confidence=float(data.get("confidence", 0.7)), params=params, titles=titles, root_cause=root_cause,
        evidence=evidence, fixes=fixes, related_rules=tuple(str(r) for r in data.get("related_rules") or ()),
        source=path,
    )


@functools.lru_cache(maxsize=None)
def load_monitor_rules(directory: str | None = None) -> dict[str, MonitorRule]:
    folder = Path(directory) if directory else rules_dir() / "monitors"
    rules: dict[str, MonitorRule] = {}
    for path in sorted(folder.glob("*.yaml")):
        rule = _parse(path)
        rules[rule.id] = rule
    if not rules:
        raise MonitorRuleError(f"no detectors found in {folder}")
    return rules
