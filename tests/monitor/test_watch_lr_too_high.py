"""A NaN onset is explained from the loss trajectory before it (issue 28, point 5): a loss that
grows geometrically says "learning rate too high" first, with the lr read from the optimizer; a
steady loss points at an unsafe operation; one spike at a bad batch."""

from __future__ import annotations

import pytest

from traindoctor.diagnose import diagnose_text
from traindoctor.monitor.curves import diagnose_curves
from traindoctor.monitor.detectors import _trajectory

from monitor_helpers import monitored


def _curves(values: list) -> object:
    log = "\n".join(f"step {i} loss {v}" for i, v in enumerate(values))
    return diagnose_curves(log, diagnose_text(log, correlate=False))


def test_trajectory_shapes() -> None:
    assert _trajectory([2.0, 7.1, 8.3e4, 1.9e19])["geometric"]
    assert _trajectory([2.0, 2.1, 1.9, 2.0, 2.05, 1.95, 30.0])["spike"]
    assert _trajectory([2.3, 2.2, 2.25, 2.2, 2.1, 2.15])["steady"]


def test_geometric_growth_says_learning_rate_first() -> None:
    diagnosis = _curves([2.3, 2.2, 2.1, 2.0, 1.9, 7.1, 8.29e4, 1.88e19, "nan", "nan"])
    assert diagnosis.kind == "nan-onset"
    assert diagnosis.title.startswith("Learning rate too high")
    assert diagnosis.fixes[0].title == "Lower the learning rate"


def test_a_steady_loss_points_at_an_unsafe_operation_not_the_lr() -> None:
    diagnosis = _curves([2.3, 2.2, 2.25, 2.2, 2.1, 2.15, 2.1, 2.05, "nan", "nan"])
    assert "unsafe operation" in diagnosis.root_cause and "learning rate" not in diagnosis.root_cause
    assert "Lower the learning rate" not in [f.title for f in diagnosis.fixes]


@pytest.mark.slow
def test_watch_on_lr_1e3_says_the_learning_rate_is_too_high(tmp_path) -> None:
    outcome = monitored("watch", "lr_1e3.py", cwd=tmp_path)
    nan = outcome.finding("nan-onset")
    assert nan["title"].startswith("Learning rate too high"), nan["title"]
    assert nan["root_cause"].startswith("The learning rate (1000) is too high"), nan["root_cause"]
    assert nan["fixes"][0]["title"] == "Lower the learning rate"
