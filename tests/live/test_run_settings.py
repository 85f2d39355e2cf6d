"""`run` reads the optimizer's settings and AMP's GradScaler live at the failure (issue 28, point 5):
a learning rate far above its family's range is said first; the scale is evidence."""

from __future__ import annotations

from live_helpers import run_json


def test_lr_1e3_with_a_grad_scaler_says_the_learning_rate_first_and_shows_the_scale():
    outcome = run_json("lr_1e3_scaler_nan.py")
    diagnosis = outcome.diagnosis
    assert diagnosis["kind"] == "nan-inf"
    live_part = diagnosis["root_cause"].split("Live: ", 1)[1]
    assert live_part.startswith("the learning rate of `optimizer` (1000) is far above the usual range for SGD")
    evidence = "\n".join(diagnosis["evidence"])
    assert "Optimizer `optimizer` (SGD): lr 1000, weight decay 0, momentum 0.9." in evidence
    assert "GradScaler `scaler`: scale 1." in evidence
