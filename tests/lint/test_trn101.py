"""TRN101 specifics; its whole-script cases (tests/lint/cases/trn1xx_*.py) run in
test_cases_all_rules.py with every other rule."""

from __future__ import annotations

from pathlib import Path

from traindoctor.config import Config
from traindoctor.lint import lint_source

CONFIG = Config()


def test_related_information_points_at_origin_and_backward():
    source = (Path(__file__).parent / "cases" / "trn1xx_mnist_epoch_loss.py").read_text()
    [finding] = [f for f in lint_source(source, "m.py", CONFIG).findings if f.code == "TRN101"]
    lines = {r.message.split(":")[0]: r.range.start.line + 1 for r in finding.related}
    assert 26 in lines.values() and 27 in lines.values()  # loss = F.nll_loss(...); loss.backward()
    # summed after `loss.backward()`: the saved activations are freed, the chained nodes stay
    assert "train_loss" in finding.message and "graph nodes stay chained" in finding.message
