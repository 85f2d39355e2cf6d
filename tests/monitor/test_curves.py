"""`traindoctor curves`: findings at the right steps from text logs, CSV and TensorBoard files."""

from __future__ import annotations

import math

import pytest

from monitor_helpers import traindoctor
from traindoctor.monitor.curves import parse_text, read_curves
from traindoctor.monitor.findings import detect
from traindoctor.monitor.series import RunData

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _text_log(path):
    lines = []
    for step in range(10, 310, 10):
        loss = 2.3 * math.exp(-step / 200) if step < 250 else float("nan")
        lines.append(f"Epoch 1 | step {step} | loss {loss:.4f} | lr 0.001")
    path.write_text("\n".join(lines) + "\n")
    return path


def _csv(path):
    rows = ["step,train_loss,val_loss,lr"]
    for step in range(1, 11):
        train = 1.0 / step
        val = 1.0 / step if step <= 5 else 0.2 + 0.05 * (step - 5)
        rows.append(f"{step * 100},{train:.4f},{val:.4f},0.01")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_plain_text_log_nan_onset_at_the_logged_step(tmp_path):
    outcome = traindoctor("curves", "--format", "json", str(_text_log(tmp_path / "train.log")), cwd=tmp_path)
    payload = outcome.payload
    assert payload["command"] == "curves" and payload["verdict"] == "problems"
    nan = outcome.finding("nan-onset")
    assert nan["step"] == 250 and nan["details"]["log_line"] == 25
    assert "loss before it: 200: 0.8461, 210: 0.8049, 220: 0.7656, 230: 0.7283, 240: 0.6927" in nan["evidence"]
    assert outcome.code == 1


def test_csv_train_val_gap_at_the_best_validation_step(tmp_path):
    outcome = traindoctor("curves", "--format", "json", str(_csv(tmp_path / "metrics.csv")), cwd=tmp_path)
    gap = outcome.finding("overfitting")
    assert gap["step"] == 500
    assert gap["details"]["facts"]["val_series"] == "val_loss"
    assert "Stop early at step 500 (keep that checkpoint)" in [f["title"] for f in gap["fixes"]]


@pytest.mark.slow
def test_tensorboard_events_spike_and_lr_to_zero_with_a_plot(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(tmp_path / "tb"))
    for step in range(60):
        loss = 1.0 - step * 0.01 + (20.0 if step == 30 else 0.0)  # one spike, 30x: above the isolated bar
        writer.add_scalar("Loss/train", loss, step)
        writer.add_scalar("lr", 0.1 if step < 40 else 0.0, step)
    writer.close()
    plot = tmp_path / "out" / "curves.png"
    outcome = traindoctor("curves", "--format", "json", "--plot", str(plot), str(tmp_path / "tb"), cwd=tmp_path)
    spike = outcome.finding("loss-spike")
    assert spike["step"] == 30 and spike["details"]["spike_steps"] == [30]
    lr = outcome.finding("lr-schedule")
    assert lr["step"] == 40 and lr["title"] == "The learning rate reaches 0 at step 40"
    assert outcome.payload["plot"] == str(plot)
    assert plot.read_bytes()[:8] == PNG_MAGIC


def test_watch_records_are_curves_too(tmp_path):
    lines = [f'{{"step": {s}, "loss": {1.0 / s}, "grad_norm": 1.0, "lr": [0.1]}}' for s in range(1, 20)]
    lines.append('{"step": 20, "loss": "nan", "grad_norm": "nan", "lr": [0.1]}')
    (tmp_path / "steps.jsonl").write_text("\n".join(lines) + "\n")
    findings = detect(read_curves([tmp_path / "steps.jsonl"]), "curves")
    assert [(f.diagnosis.kind, f.step) for f in findings] == [("nan-onset", 20)]


def test_log_dialects_are_read():
    text = "\n".join([
        "{'loss': 0.9, 'learning_rate': 5e-05, 'epoch': 0.1}",  # Hugging Face Trainer
        "{'loss': nan, 'learning_rate': 5e-05, 'epoch': 0.2}",
        "Epoch 0:  50%|#####     | 5/10 [00:01<00:01, 4.1it/s, v_num=0, train_loss=0.310, val_loss=0.500]",
        "100%|##########| 10/10 [00:02<00:00, loss=0.25, lr=0.001]",  # tqdm postfix
        "Test: [ 10/100]  Loss nan (nan)",  # timm / torchvision reference scripts
        "loss: 0.31",
        "loss=inf",
        "Epoch 0:  71%|#######1  | 5880/8295 [04:01<01:39, 24.37it/s, v_num=0, train_loss_step=nan.0",  # Lightning
        "2026-01-02 10:00:00 | INFO | epoch 7 | [Loss] nan | [lr] 0.001 | [step] 140",  # bracketed keys
        "2026-01-02 10:00:30 | INFO | epoch 8 | [Loss] 1.0 | [lr] 0.001 | [step] 160",
    ])
    series = parse_text(text)
    assert math.isnan(series["loss"].values[1]) and math.isnan(series["loss"].values[3])  # HF nan, `Loss nan (nan)`
    assert [v for v in series["loss"].values if not math.isnan(v)] == [0.9, 0.25, 0.31, float("inf"), 1.0]
    assert math.isnan(series["loss"].values[-2]) and math.isnan(series["train_loss_step"].values[0])
    assert series["loss"].steps[-2:] == (140, 160)  # the bracketed step key, not the epoch
    assert series["train_loss"].values == (0.31,) and series["val_loss"].values == (0.5,)
    assert series["learning_rate"].values == (5e-05, 5e-05) and series["lr"].values == (0.001, 0.001, 0.001)


def test_diagnose_reads_the_curves_of_a_log_without_a_traceback(tmp_path):
    outcome = traindoctor("diagnose", "--format", "json", str(_text_log(tmp_path / "train.log")), cwd=tmp_path)
    import json

    diagnosis = json.loads(outcome.stdout)
    assert diagnosis["kind"] == "nan-onset" and diagnosis["details"]["step"] == 250
    assert outcome.code == 1  # a failure recognised


def test_a_progress_bar_log_is_not_read_as_csv():
    # tqdm lines have commas; without a file suffix (diagnose's fallback) they are still a text log
    from traindoctor.monitor.curves import parse_content

    lines = [f"Epoch 1: {i:3d}%|#####     | {i}/60 [00:01<00:01, 20.1it/s, loss={2.0 / i if i < 40 else math.nan:.4f}]"
             for i in range(1, 60)]
    series = parse_content("\n".join(lines) + "\n")
    assert len(series["loss"].steps) == 59
    findings = detect(RunData("curves", series), "curves")
    assert findings[0].diagnosis.kind == "nan-onset" and findings[0].step == 40
    assert "loss" in parse_content("step,train/loss,val acc (%)\n1,2.0,10\n2,1.5,11\n")["train/loss"].name


def test_unreadable_input_is_a_one_line_error(tmp_path):
    outcome = traindoctor("curves", str(tmp_path / "missing.log"), cwd=tmp_path)
    assert outcome.code == 2 and outcome.stderr.strip() == f"traindoctor curves: {tmp_path / 'missing.log'}: no such file"
    (tmp_path / "empty.log").write_text("nothing to see\n")
    outcome = traindoctor("curves", str(tmp_path / "empty.log"), cwd=tmp_path)
    assert outcome.code == 2 and "no loss" in outcome.stderr


def test_divergence_after_the_best_step(tmp_path):
    """The loss falls to its best at step 100, then climbs back (lr too high for this stage)."""
    losses = [2.0 - 0.015 * s for s in range(0, 101, 5)] + [0.5 + 0.06 * (s - 100) for s in range(105, 205, 5)]
    steps = list(range(0, 205, 5))
    log = tmp_path / "train.log"
    log.write_text("".join(f"step {s} loss {v:.4f}\n" for s, v in zip(steps, losses)))
    divergence = traindoctor("curves", "--format", "json", str(log), cwd=tmp_path).finding("divergence")
    assert divergence["details"]["facts"]["best_step"] == 100
    assert divergence["step"] > 100


def test_a_stalled_loss_is_a_plateau_and_a_falling_loss_is_not(tmp_path):
    """Stuck at 1.8 from step 30 on, well above where it began (2.3): training stalled. The plateau
    is reported from the start of the examined tail (the last 40 % of the points)."""
    stalled = [2.3 - 0.5 * s / 30 if s < 30 else 1.8 + 0.001 * (s % 2) for s in range(100)]
    log = tmp_path / "stalled.log"
    log.write_text("".join(f"step {s} loss {v:.4f}\n" for s, v in enumerate(stalled)))
    plateau = traindoctor("curves", "--format", "json", str(log), cwd=tmp_path).finding("plateau")
    assert plateau["mode"] == "silent-error" and plateau["step"] == 60
    falling = tmp_path / "falling.log"
    falling.write_text("".join(f"step {s} loss {2.3 * math.exp(-s / 200):.4f}\n" for s in range(100)))
    outcome = traindoctor("curves", "--format", "json", str(falling), cwd=tmp_path)
    assert outcome.payload["verdict"] == "ok" and outcome.code == 0


def _jsonl(path, losses, norms=None):
    lines = [f'{{"step": {s}, "loss": {v}, "grad_norm": {norms[s - 1] if norms else 1.0}, "lr": [0.1]}}'
             for s, v in enumerate(losses, 1)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _spikes(path):
    return [f for f in detect(read_curves([path]), "curves") if f.diagnosis.kind == "loss-spike"]


def test_one_spike_recovered_at_once_with_no_trend_is_noise(tmp_path):
    """A 4x jump at step 66 of a noisy loss, back down the next step: not a finding at all."""
    losses = [1.0 + 0.05 * ((s * 7) % 5) for s in range(100)]
    losses[65] = 4.5
    assert _spikes(_jsonl(tmp_path / "steps.jsonl", losses)) == []


def test_repeated_spikes_are_reported_without_clipping_unless_the_gradient_jumped(tmp_path):
    losses = [1.0] * 100
    for step in (30, 60, 90):
        losses[step - 1] = 4.0
    [spike] = _spikes(_jsonl(tmp_path / "loss_only.jsonl", losses))
    assert spike.step == 30 and spike.diagnosis.details["spike_steps"] == [30, 60, 90]
    assert "Clip gradients" not in [f.title for f in spike.diagnosis.fixes]
    norms = [1.0] * 100
    norms[29] = 50.0  # the gradient jumped with the loss at step 30
    [spike] = _spikes(_jsonl(tmp_path / "with_norms.jsonl", losses, norms))
    assert spike.diagnosis.fixes[0].title == "Clip gradients"


def test_a_spike_followed_by_a_rising_trend_is_reported(tmp_path):
    losses = [1.0] * 40 + [5.0] + [2.0] * 40  # back below 3x the median, but settles twice as high
    [spike] = _spikes(_jsonl(tmp_path / "steps.jsonl", losses))
    assert spike.step == 41
