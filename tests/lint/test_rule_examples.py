"""Every rule's examples (rules/lint/<CODE>.yaml `valid`/`invalid`, also shown on its
documentation page) become tests (Fixit's pattern). Strict rules are selected."""

from __future__ import annotations

import ast

import pytest

from traindoctor.config import Config
from traindoctor.lint import fix_source, lint_source
from traindoctor.lint.engine import all_rules

CONFIG = Config(select=("all",))


def _cases(valid: bool) -> list:
    return list(_iter_cases(valid))


def _iter_cases(valid: bool):
    for rule in all_rules():
        info = rule.info()
        examples = info.valid if valid else info.invalid
        for index, example in enumerate(examples):
            yield pytest.param(rule, example, id=f"{rule.CODE}-{'valid' if valid else 'invalid'}-{index}")


def test_every_rule_has_examples():
    for rule in all_rules():
        info = rule.info()
        assert len(info.valid) >= 3, f"{rule.CODE} needs look-alikes that are fine"
        assert len(info.invalid) >= 3, f"{rule.CODE} needs examples that fire"


@pytest.mark.parametrize("rule, snippet", _cases(valid=True))
def test_valid_examples_do_not_fire(rule, snippet):
    result = lint_source(snippet, "example.py", CONFIG)
    assert result.error is None, result.error
    hits = [f for f in result.findings if f.code == rule.CODE]
    assert hits == [], f"{rule.CODE} fired on a fine example:\n{snippet}\n{hits}"


@pytest.mark.parametrize("rule, example", _cases(valid=False))
def test_invalid_examples_fire_and_fix(rule, example):
    result = lint_source(example.code, "example.py", CONFIG)
    assert result.error is None, result.error
    hits = [f for f in result.findings if f.code == rule.CODE]
    assert hits, f"{rule.CODE} missed:\n{example.code}"
    if example.line is not None:
        assert example.line in [f.range.start.line + 1 for f in hits]
    if example.fixed is not None:
        fixed, applied = fix_source(example.code, "example.py", CONFIG, unsafe=True)
        assert fixed == example.fixed
        assert applied >= 1
        ast.parse(fixed)
        again, _ = fix_source(fixed, "example.py", CONFIG, unsafe=True)
        assert again == fixed, "applying the fixes twice must change nothing more"
        assert not [f for f in lint_source(fixed, "example.py", CONFIG).findings if f.code == rule.CODE]
