"""TRN101 on whole training scripts (tests/lint/cases/trn1xx_*.py), each line
that must be flagged marked `# expect: TRN101`; every other line stays quiet."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from traindoctor.config import Config
from traindoctor.lint import fix_source, lint_source

CASES = sorted((Path(__file__).parent / "cases").glob("trn1xx_*.py"))
CONFIG = Config()


def _expected(source: str) -> set[int]:
    return {n for n, line in enumerate(source.splitlines(), 1) if re.search(r"#\s*expect:.*TRN101", line)}


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path: Path):
    source = path.read_text()
    found = {f.range.start.line + 1 for f in lint_source(source, str(path), CONFIG).findings if f.code == "TRN101"}
    assert found == _expected(source)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case_fix(path: Path):
    source = path.read_text()
    fixed, _ = fix_source(source, str(path), CONFIG)
    ast.parse(fixed)
    assert not [f for f in lint_source(fixed, str(path), CONFIG).findings if f.code == "TRN101"]
    assert fix_source(fixed, str(path), CONFIG)[0] == fixed


def test_related_information_points_at_origin_and_backward():
    source = (Path(__file__).parent / "cases" / "trn1xx_mnist_epoch_loss.py").read_text()
    [finding] = [f for f in lint_source(source, "m.py", CONFIG).findings if f.code == "TRN101"]
    lines = {r.message.split(":")[0]: r.range.start.line + 1 for r in finding.related}
    assert 26 in lines.values() and 27 in lines.values()  # loss = F.nll_loss(...); loss.backward()
    assert "train_loss" in finding.message and "CUDA OOM" in finding.message
