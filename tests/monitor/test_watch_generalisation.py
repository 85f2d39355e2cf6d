"""What bench/watch's dev half found `watch` getting wrong on scripts it was not written for, each
fixed generally and checked here on a real run: the same batch fed at every step (a new detector),
batch noise near convergence taken for loss spikes and gradient explosions, and a StepLR drop
taken for a learning-rate anomaly."""

from __future__ import annotations

import pytest

from monitor_helpers import monitored

pytestmark = pytest.mark.slow


def _kinds(outcome) -> list[str]:
    assert outcome.payload["command"] == "watch", outcome.stderr
    return [f["kind"] for f in outcome.payload["findings"]]


def test_next_iter_every_step_is_the_same_loader_batch(tmp_path) -> None:
    finding = monitored("watch", "same_batch.py", script_args=("next-iter",), cwd=tmp_path).finding("repeated-batch")
    facts = finding["details"]["facts"]
    assert facts["from_loader"] and facts["dataset_size"] == 3200 and facts["batch_size"] == 32
    assert finding["step"] == 2 and facts["last_step"] == 100  # the model's input is seen from step 2
    assert "next(iter(loader))" in finding["root_cause"]
    assert finding["fixes"][0]["title"] == "Iterate the DataLoader once per epoch"
    assert finding["location"]["code"] == "xb, yb = next(iter(loader))"  # where the iterator is made


def test_a_slice_that_ignores_the_loop_index_is_the_same_batch(tmp_path) -> None:
    finding = monitored("watch", "same_batch.py", script_args=("slice",), cwd=tmp_path).finding("repeated-batch")
    assert not finding["details"]["facts"].get("from_loader")
    assert "a slice of a larger tensor" in finding["root_cause"]
    assert finding["fixes"][0]["title"] == "Slice with the loop index"


@pytest.mark.parametrize("variant", ["full-batch", "loop"])
def test_full_batch_training_and_a_plain_loop_are_not_reported(tmp_path, variant) -> None:
    outcome = monitored("watch", "same_batch.py", script_args=(variant,), cwd=tmp_path)
    assert outcome.code == 0 and "repeated-batch" not in _kinds(outcome), outcome.payload["findings"]


def test_overfit_repeats_batches_on_purpose_and_says_nothing_of_it(tmp_path) -> None:
    outcome = monitored("overfit", "same_batch.py", "--steps", "40", script_args=("loop",), cwd=tmp_path)
    assert "repeated-batch" not in _kinds_of_any(outcome)


def _kinds_of_any(outcome) -> list[str]:
    return [f["kind"] for f in outcome.payload["findings"]]


def test_batch_noise_near_convergence_is_neither_a_spike_nor_an_explosion(tmp_path) -> None:
    """Its loss falls from ~1.4 to ~0.01 and then jumps 3-10x its median on a hard batch now and
    then, its gradient norm likewise: below where both were in its first steps, and inside the
    scatter of the batches around it."""
    outcome = monitored("watch", "noisy_converged.py", cwd=tmp_path)
    assert outcome.code == 0 and _kinds(outcome) == [], outcome.payload["findings"]


def test_a_step_schedule_is_quiet_and_a_schedule_stepped_per_batch_is_not(tmp_path) -> None:
    per_epoch = monitored("watch", "step_schedules.py", script_args=("per-epoch",), cwd=tmp_path)
    assert "lr-schedule" not in _kinds(per_epoch), per_epoch.payload["findings"]
    finding = monitored("watch", "step_schedules.py", script_args=("per-batch",), cwd=tmp_path).finding("lr-schedule")
    assert finding["title"].startswith("The learning rate collapses to ")
    assert "stepped every batch" in finding["root_cause"]


def test_an_in_memory_loader_that_outweighs_a_tiny_model_is_not_starving_it(tmp_path) -> None:
    """Collating 256 in-memory rows is ~0.7 of a ~1 ms step (1.4 ms on a loaded machine): indexing a
    TensorDataset is not work that workers could overlap, so not a slow loader at any load."""
    outcome = monitored("watch", "in_memory_loader.py", cwd=tmp_path)
    assert outcome.code == 0 and "data-starved" not in _kinds(outcome), outcome.payload["findings"]


def test_memory_that_rose_in_one_epoch_and_jumped_once_is_not_a_leak() -> None:
    """The RSS of a real `watch` run of bench/watch's feature_bank_freed_each_epoch (a bank of
    embeddings filled in the first epoch and cleared, a 40 MB allocation at the second epoch's end,
    then flat), sampled every step for 100 steps, then by time: a straight enough line (r2 0.93)
    whose halves of the samples both rise. Its last quarter of steps is flat: no leak. The same
    points with a steady rise to the end are one."""
    import json
    from pathlib import Path

    from traindoctor.monitor.detectors import _memory_growth
    from traindoctor.monitor.series import RunData, series_from_records

    def run(records):
        return RunData("watch", series_from_records(records), records)

    points = json.loads((Path(__file__).parent / "data" / "feature_bank_rss.json").read_text())["rss"]
    params = {"min_steps": 20, "min_growth_bytes": 2e7, "min_r2": 0.9, "skip": 3, "min_tail_ratio": 0.5}
    recorded = run([{"step": s, "rss": v} for s, v in points])
    assert _memory_growth(recorded, {**params, "tail_steps": 1.0}) is not None  # judged by halves only: a leak
    assert _memory_growth(recorded, {**params, "tail_steps": 0.25}) is None
    steady = run([{"step": s, "rss": points[0][1] + 250_000 * s} for s, _ in points])
    assert _memory_growth(steady, {**params, "tail_steps": 0.25}) is not None
