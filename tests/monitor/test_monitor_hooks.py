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


def _train(model: torch.nn.Module, optimizer: torch.optim.Optimizer, steps: int) -> None:
    for _ in range(steps):
        optimizer.zero_grad()
        model(torch.randn(4, 8)).sum().backward()
        optimizer.step()


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]


def test_the_model_in_eval_mode_is_seen_at_once_and_a_submodule_at_the_next_scan(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    monitor = hooks.Monitor({"run_dir": str(tmp_path)})
    monitor.install()
    try:
        _train(model, optimizer, 12)
        model[1].eval()  # a submodule only: the roots stay in train mode
        _train(model, optimizer, 10)
        model.train()
        _train(model, optimizer, 3)
        model.eval()  # the whole model: seen at the very next step
        _train(model, optimizer, 2)
    finally:
        monitor.close(0)
    in_eval = [r["step"] for r in _records(tmp_path) if r.get("eval_examples")]
    every = hooks._EVAL_SCAN_EVERY
    # steps 13-22 ran with the Dropout in eval; the first scan after that is step 20
    assert in_eval[:3] == [20, 21, 22] and 20 % every == 0  # then read every step while one is in eval
    assert in_eval[3:] == [26, 27]  # model.train() at 23 is seen at once
    assert dict(_records(tmp_path)[25]["eval_examples"])["Sequential"] == "Sequential"
    assert dict(_records(tmp_path)[19]["eval_examples"]) == {"Sequential.1": "Dropout"}


def test_closing_the_monitor_gives_torch_its_own_functions_back(tmp_path):
    from torch.utils.data import dataloader

    originals = (torch.Tensor.backward, dataloader._BaseDataLoaderIter.__next__, dataloader.DataLoader.__iter__,
                 torch.amp.GradScaler.scale)
    monitor = hooks.Monitor({"run_dir": str(tmp_path)})
    monitor.install()
    assert torch.Tensor.backward is not originals[0]
    model = torch.nn.Linear(8, 1)
    _train(model, torch.optim.SGD(model.parameters(), lr=0.01), 3)
    monitor.close(0)
    assert (torch.Tensor.backward, dataloader._BaseDataLoaderIter.__next__,
            dataloader.DataLoader.__iter__, torch.amp.GradScaler.scale) == originals
    assert [r["step"] for r in _records(tmp_path)] == [1, 2, 3]


def _closure_run(tmp_path: Path, stop_on: str | None, nan_at: int, as_keyword: bool):
    """SGD stepped with a closure (LBFGS-style; Lightning's `optimizer.step(closure=...)`): the loss
    and the gradients come into being inside `step`, after the pre-hook."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, losses = torch.randn(16, 4), []
    y = x.sum(1, keepdim=True)
    monitor = hooks.Monitor({"run_dir": str(tmp_path), "stop_on": stop_on})
    monitor.install()
    try:
        for step in range(1, 6):
            def closure():
                optimizer.zero_grad()
                loss = torch.nn.functional.mse_loss(model(x), y) * (float("nan") if step == nan_at else 1.0)
                loss.backward()
                losses.append(loss.item())
                return loss
            optimizer.step(closure=closure) if as_keyword else optimizer.step(closure)
    finally:
        monitor.close(0)
    return losses, _records(tmp_path)


@pytest.mark.parametrize("as_keyword", [True, False])
def test_a_step_with_a_closure_is_read_after_the_closure_computed_its_loss(tmp_path, as_keyword):
    losses, records = _closure_run(tmp_path, None, nan_at=4, as_keyword=as_keyword)
    assert [r["step"] for r in records] == [1, 2, 3, 4, 5]
    assert [r["loss"] for r in records[:3]] == pytest.approx(losses[:3])  # not the step before's
    assert records[3]["loss"] == "nan" and records[3]["nonfinite_grad"] == "Linear.weight"
    assert records[0]["missing_grad_params"] == 0


def test_stop_on_nan_with_a_closure_stops_at_the_nan_step(tmp_path):
    with pytest.raises(hooks.NonFiniteTraining):
        _closure_run(tmp_path, "nan", nan_at=3, as_keyword=True)
    records = _records(tmp_path)
    assert [r["step"] for r in records] == [1, 2, 3] and records[-1]["loss"] == "nan"


def test_stop_on_nan_with_a_closure_leaves_the_weights_finite(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    monitor = hooks.Monitor({"run_dir": str(tmp_path), "stop_on": "nan"})
    monitor.install()

    def closure():
        optimizer.zero_grad()
        loss = model(torch.randn(8, 4)).sum() * float("nan")
        loss.backward()
        return loss

    try:
        with pytest.raises(hooks.NonFiniteTraining):
            optimizer.step(closure=closure)
    finally:
        monitor.close(0)
    assert torch.isfinite(model.weight).all()


def test_with_a_grad_scaler_the_loss_recorded_is_the_unscaled_one(tmp_path):
    # `scaler.scale(loss).backward()`: what is backpropagated is the loss times 1024 here (65536 by
    # default, halved and doubled as the scaler adapts); the run's loss is the one before scaling.
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    x = torch.randn(16, 4)
    y = x.sum(1, keepdim=True)
    losses = []
    monitor = hooks.Monitor({"run_dir": str(tmp_path)})
    monitor.install()
    try:
        for _ in range(4):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)  # unscales the gradients before optimizer.step()
            scaler.update()
            losses.append(loss.item())
    finally:
        monitor.close(0)
    assert [r["loss"] for r in _records(tmp_path)] == pytest.approx(losses)
