"""A NaN onset is explained from the loss and gradient-norm trajectories before it and from what
`watch` read live at the onset (issue 28, point 5): a loss that grows geometrically says "learning
rate too high" first, with the lr read from the optimizer; a steady run whose weights and batch were
finite points at an unsafe operation; one spike at a bad batch, even when the loss grows after it."""

from __future__ import annotations

import pytest

import torch

from traindoctor.diagnose import diagnose_text
from traindoctor.monitor.bootstrap import _load_hooks
from traindoctor.monitor.curves import diagnose_curves
from traindoctor.monitor.detectors import _onset_facts, _shape, _trajectory

from monitor_helpers import monitored

hooks = _load_hooks()


def _curves(values: list) -> object:
    log = "\n".join(f"step {i} loss {v}" for i, v in enumerate(values))
    return diagnose_curves(log, diagnose_text(log, correlate=False))


def test_trajectory_shapes() -> None:
    assert _trajectory(list(enumerate([2.0, 7.1, 8.3e4, 1.9e19])))["geometric"]
    assert _trajectory(list(enumerate([2.0, 2.1, 1.9, 2.0, 2.05, 1.95, 30.0])))["spike"]
    assert _trajectory(list(enumerate([2.3, 2.2, 2.25, 2.2, 2.1, 2.15])))["steady"]


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
    facts = nan["details"]["facts"]
    assert facts["grad_trajectory"].startswith("growing geometrically") and facts["geometric"]
    assert facts["inputs"] == "weights finite, batch not seen (no DataLoader)"
    assert "unsafe_op" not in facts and "Guard unsafe math" not in [f["title"] for f in nan["fixes"]]
    # the gradient explosion before it says the same, first: its norm grew geometrically from step 1
    explosion = outcome.finding("gradient-explosion")
    assert explosion["title"].startswith("Learning rate too high: the gradient norm grows"), explosion["title"]
    assert "(lr 1000)" in explosion["title"] and explosion["fixes"][0]["title"] == "Lower the learning rate"


def test_trajectory_from_both_series() -> None:
    steady = [(s, 2.0 + 0.05 * (s % 3)) for s in range(1, 30)]
    # one jump out of a steady run, then growth: the jump comes first (a bad batch), not the lr
    thrown = steady + [(30, 7e6), (31, 1e12), (32, 2e24)]
    assert _shape(thrown) == {"shape": "spike", "spike_step": 30, "jump": _shape(thrown)["jump"], "after_spike": True}
    assert _trajectory(thrown)["spike"] and "geometric" not in _trajectory(thrown)
    # a slow rise that turns geometric (a warm-up to a learning rate too high) is the lr
    rising = steady + [(30, 2.6), (31, 4.2), (32, 9.0), (33, 25.0), (34, 80.0)]
    assert _shape(rising)["shape"] == "geometric" and _trajectory(rising)["geometric"]
    # a steady loss is not steady when its gradient norm grew geometrically
    grads = [(s, 1.0) for s in range(1, 26)] + [(26, 5.0), (27, 40.0), (28, 300.0), (29, 2500.0)]
    both = _trajectory(steady, grads)
    assert both["geometric"] and "steady" not in both and both["grad_trajectory"].startswith("growing")
    assert _trajectory(steady, [(s, 1.0) for s in range(1, 30)])["steady"]


def test_what_watch_reads_at_the_onset_step(tmp_path) -> None:
    """hooks.Monitor._onset_context on real torch objects: the weights and the batch checked for
    NaN/inf, Adam's settings and the GradScaler's scale, read live."""
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.01)
    monitor = hooks.Monitor({"run_dir": str(tmp_path)})
    monitor.params = list(model.parameters())
    monitor.batch = (torch.ones(2, 4), {"labels": torch.tensor([1.0, float("nan")])})
    monitor.scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    onset = monitor._onset_context(optimizer)
    monitor.close()
    assert onset["params_finite"] is True and onset["batch_finite"] is False
    assert onset["settings"] == {"betas": [0.8, 0.99], "eps": 1e-6, "weight_decay": 0.01}
    assert onset["scaler"] == {"scale": 1024.0, "enabled": True}
    facts = _onset_facts(onset)
    assert facts["inputs"] == "weights finite, batch holds NaN/inf" and facts["bad_batch"]
    assert not facts["finite_inputs"] and facts["scale"] == "1024"
    assert facts["settings"] == "betas (0.8, 0.99), eps 1e-06, weight decay 0.01"


@pytest.mark.slow
def test_watch_on_a_steady_run_hitting_log_zero_names_an_unsafe_operation(tmp_path) -> None:
    outcome = monitored("watch", "log_zero_steady.py", cwd=tmp_path)
    nan = outcome.finding("nan-onset")
    facts = nan["details"]["facts"]
    assert nan["step"] == 25 and facts["steady"] and facts["grad_trajectory"] == "steady"
    assert facts["inputs"] == "weights finite, batch finite" and facts["unsafe_op"]
    assert nan["title"].endswith("from finite inputs after a steady run: an unsafe operation"), nan["title"]
    assert "Lower the learning rate" not in [f["title"] for f in nan["fixes"]]
    assert nan["fixes"][0]["title"] == "Guard unsafe math"
    assert facts["settings"] == "betas (0.9, 0.999), eps 1e-08, weight decay 0.0001"
    # log(p) and log(1 - p) of p = sigmoid(...), both at line 20
    assert [f["code"] for f in nan["related_findings"]] == ["TRN402", "TRN402"]


@pytest.mark.slow
def test_watch_on_one_bad_batch_says_spike_not_learning_rate(tmp_path) -> None:
    """bad_batch.py: inputs x1000 at step 30 of a steady run; the loss grows after it and is inf at 33."""
    outcome = monitored("watch", "bad_batch.py", cwd=tmp_path)
    nan = outcome.finding("nan-onset")
    assert nan["title"].startswith("One spike at step 30 out of a steady run"), nan["title"]
    titles = [f["title"] for f in nan["fixes"]]
    assert titles[0] == "Inspect the batch of step 30" and "Lower the learning rate" not in titles
    assert "unsafe_op" not in nan["details"]["facts"]
    divergence = outcome.finding("divergence")
    assert "after one spike at step 30" in divergence["title"]
    assert not outcome.finding("gradient-explosion")["title"].startswith("Learning rate too high")
