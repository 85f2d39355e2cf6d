"""Mechanisms of the in-process monitor (`monitor/hooks.py`) that keep its cost per step low."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from monitor_helpers import monitored
from traindoctor.monitor.bootstrap import _load_hooks

hooks = _load_hooks()


def test_the_nan_onset_is_on_disk_at_once_though_records_are_written_in_batches(tmp_path):
    # SIGKILL right after the step with the inf loss: no exit handler writes what is still in memory.
    outcome = monitored("watch", "nan_killed.py", cwd=tmp_path)
    assert outcome.payload["exit_code"] != 0
    run_dir = Path(outcome.payload["run_dir"])
    records = [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2, 3, 4]
    assert records[3]["loss"] == "inf" and records[3]["nonfinite_grad"] == "Sequential.0.weight"
    assert outcome.finding("nan-onset")["step"] == 4


@pytest.mark.parametrize("shapes", [[(512, 256), (512, 512), (10, 512)], [(16, 8), (1, 16)], [(3, 300), (7,)]])
def test_the_sampled_update_ratio_follows_the_exact_one(shapes):
    torch.manual_seed(0)
    params = [torch.randn(shape) for shape in shapes]
    ratios = hooks._UpdateRatios()
    ratios.before(params)
    before = [p.clone() for p in params]
    scales = [10.0 ** -(k + 2) for k in range(len(params))]
    with torch.no_grad():  # in place, as an optimizer does: the samples are views, not copies
        for p, scale in zip(params, scales):
            p.add_(torch.randn_like(p), alpha=scale)
    estimated = hooks._ratios(*ratios.after().tolist())
    exact = [((p - b).norm() / b.norm()).item() for p, b in zip(params, before)]
    assert estimated == pytest.approx(exact, rel=0.35)
    assert all(view.numel() <= hooks._RATIO_SAMPLE for view in ratios.views)


def test_an_unchanged_layer_has_update_ratio_zero_and_reassigned_weights_get_new_views():
    layer = torch.nn.Linear(64, 64)
    ratios = hooks._UpdateRatios()
    ratios.before([layer.weight])
    assert hooks._ratios(*ratios.after().tolist()) == [0.0]
    layer.weight.data = torch.ones(64, 64)  # new storage: the old views would read freed memory
    ratios.before([layer.weight])
    with torch.no_grad():
        layer.weight.mul_(1.5)
    assert hooks._ratios(*ratios.after().tolist()) == pytest.approx([0.5])
