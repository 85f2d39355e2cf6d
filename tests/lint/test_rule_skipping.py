"""The engine skips a rule on a block where it has nothing to visit (Rule.applies_to).
Skipping must never change a finding: every rule's examples, the case files and the
example scripts give the same findings with every rule forced to run on every block."""

from __future__ import annotations

from pathlib import Path

import pytest

from traindoctor.config import Config
from traindoctor.lint import lint_source
from traindoctor.lint.engine import all_rules

CONFIG = Config(select=("all",))
ROOT = Path(__file__).resolve().parents[2]


def _sources() -> list:
    found = []
    for rule in all_rules():
        info = rule.info()
        found += [pytest.param(s, id=f"{rule.CODE}-valid-{i}") for i, s in enumerate(info.valid)]
        found += [pytest.param(e.code, id=f"{rule.CODE}-invalid-{i}") for i, e in enumerate(info.invalid)]
    for path in sorted((ROOT / "tests" / "lint" / "cases").glob("*.py")) + sorted((ROOT / "examples").glob("*.py")):
        found.append(pytest.param(path.read_text(), id=path.name))
    return found


@pytest.fixture
def every_rule_runs(monkeypatch):
    for rule in all_rules():
        monkeypatch.setattr(rule, "applies_to", classmethod(lambda cls, analysis: True))


@pytest.mark.parametrize("source", _sources())
def test_skipping_rules_changes_no_finding(source, request):
    skipped = lint_source(source, "example.py", CONFIG)
    request.getfixturevalue("every_rule_runs")
    forced = lint_source(source, "example.py", CONFIG)
    assert skipped == forced


def test_a_block_without_the_rules_node_types_is_not_visited(monkeypatch):
    """Rules with no handler for a block's nodes are not instantiated (counted)."""
    made: list[str] = []
    for rule in all_rules():
        original = rule.__init__

        def counting(self, *args, _original=original, _code=rule.CODE):
            made.append(_code)
            _original(self, *args)

        monkeypatch.setattr(rule, "__init__", counting)
    lint_source("import torch\nx = 1\n", "example.py", CONFIG)
    # `x = 1` has an Assign: only the rules with an Assign (or a standalone Module) handler
    assert set(made) == {"TRN101", "TRN205", "TRN301", "TRN705", "TRN707"}, made
