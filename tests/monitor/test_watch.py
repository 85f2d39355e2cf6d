"""`traindoctor watch`: real training scripts that go wrong without raising, on CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitor_helpers import PYTHON, SCRIPTS, monitored, plain, traindoctor

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("watch")


@pytest.fixture(scope="module")
def nan_run(workdir):
    return monitored("watch", "nan_lr.py", "--record", str(workdir / "records"), cwd=workdir)


def test_nan_onset_names_the_step_and_the_first_nonfinite_parameter(nan_run):
    payload = nan_run.payload
    assert payload["command"] == "watch" and payload["verdict"] == "problems"
    nan = nan_run.finding("nan-onset")
    # lr=5 multiplies the error by ~-9 per step: 7.1, 8.3e4, 1.9e19, then inf at optimizer step 4.
    assert nan["step"] == 4
    assert nan["details"]["facts"]["parameter"] == "Sequential.0.weight"
    assert nan["mode"] == "nan-gradient"
    assert (Path(nan["location"]["path"]).name, nan["location"]["line"]) == ("nan_lr.py", 19)
    assert nan["location"]["code"] == "loss.backward()"
    evidence = "\n".join(nan["evidence"])
    assert "loss before it: 1: 7.1, 2: 8.29e+04, 3: 1.88e+19" in evidence
    assert "Lower the learning rate" in [f["title"] for f in nan["fixes"]]
    assert payload["steps"] == 60 and payload["exit_code"] == 0
    assert nan_run.code == 1


def test_records_hold_the_per_step_measurements(nan_run):
    run_dir = Path(nan_run.payload["run_dir"])
    assert run_dir.parent.name == "runs" and run_dir.parent.parent.name == ".traindoctor"
    records = [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == list(range(1, 61))
    second = records[1]
    for key in ("loss", "grad_norm", "lr", "update_ratio", "step_time", "data_time", "rss", "missing_grad_params"):
        assert key in second, key
    assert second["lr"] == [5.0]
    assert set(second["update_ratio"]) == {"Sequential.0.weight", "Sequential.1.weight"}
    assert records[3]["loss"] == "inf" and records[3]["nonfinite_grad"] == "Sequential.0.weight"
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["optimizer"] == "SGD" and meta["model"] == ["Sequential"]


def test_record_is_written_for_the_finding(nan_run, workdir):
    records = list((workdir / "records").glob("*.md"))
    assert records, nan_run.stderr
    text = "\n".join(r.read_text() for r in records)
    assert "non-finite gradient in Sequential.0.weight" in text


def test_stop_on_nan_stops_at_the_step_under_the_debugger_with_live_probes(workdir):
    outcome = monitored("watch", "nan_lr.py", "--stop-on", "nan", cwd=workdir)
    payload = outcome.payload
    nan = outcome.finding("nan-onset")
    assert nan["step"] == 4 and payload["steps"] == 4
    # Stopped in the training frame, at the user's optimizer.step() line, before the step applied.
    assert (Path(nan["location"]["path"]).name, nan["location"]["line"]) == ("nan_lr.py", 20)
    live = nan["details"]["live"]
    assert live["kind"] == "nan-inf"
    assert (Path(live["location"]["path"]).name, live["location"]["line"]) == ("nan_lr.py", 20)
    live_tensors = {t["name"]: t for t in live["details"]["probes"]["tensors"]} if "probes" in live["details"] else {}
    evidence = "\n".join(live["evidence"])
    assert "tensor `loss`" in evidence or "loss" in live_tensors
    assert "step 60" not in outcome.stdout  # the run did stop
    assert outcome.code != 0


def test_trn101_leak_is_named_as_the_cause_of_memory_growth(workdir):
    outcome = monitored("watch", "leak_trn101.py", cwd=workdir)
    leak = outcome.finding("memory-leak")
    assert leak["mode"] == "oom"
    assert (Path(leak["location"]["path"]).name, leak["location"]["line"]) == ("leak_trn101.py", 16)
    assert leak["location"]["code"] == "total_val_loss += val_loss"
    assert "TRN101" in leak["title"]
    assert [(f["code"], f["line"]) for f in leak["related_findings"]] == [("TRN101", 16)]
    assert leak["details"]["facts"]["finding_code"] == "TRN101"


def test_sleeping_dataset_is_data_starved_with_the_loader_settings(workdir):
    outcome = monitored("watch", "slow_data.py", cwd=workdir)
    starved = outcome.finding("data-starved")
    assert starved["mode"] == "slow-data"
    assert starved["details"]["loader"]["num_workers"] == 0
    assert starved["details"]["loader"]["batch_size"] == 8
    assert starved["details"]["data_share"] > 0.5
    assert any("num_workers=" in f["title"] for f in starved["fixes"])
    assert (Path(starved["location"]["path"]).name, starved["location"]["line"]) == ("slow_data.py", 21)


def test_eval_mode_left_on_fires_from_the_first_step_after_validation(workdir):
    outcome = monitored("watch", "eval_mode.py", cwd=workdir)
    finding = outcome.finding("eval-mode")
    assert finding["step"] == 11  # 10 steps in train mode, then model.eval() is never undone
    assert "Sequential.1 (Dropout)" in finding["details"]["facts"]["modules"]
    assert finding["details"]["facts"]["steps_in_eval"] == 20


def test_a_healthy_script_runs_unchanged_plus_one_summary_line(workdir):
    expected = plain("healthy.py", cwd=workdir)
    outcome = traindoctor("watch", "--", PYTHON, str(SCRIPTS / "healthy.py"), cwd=workdir)
    assert outcome.code == 0, outcome.stderr
    assert outcome.stdout == expected.stdout
    extra = outcome.stderr[len(expected.stderr):] if outcome.stderr.startswith(expected.stderr) else outcome.stderr
    lines = extra.splitlines()
    assert len(lines) == 1 and lines[0].startswith("traindoctor: watched 24 optimizer steps: no problems found")


def test_a_command_that_cannot_run_is_a_one_line_error(workdir):
    outcome = traindoctor("watch", "--", PYTHON, str(workdir / "missing.py"), cwd=workdir)
    assert outcome.code == 2
    assert outcome.stderr.strip().count("\n") == 0 and "no such script" in outcome.stderr


def test_an_interpreter_without_torch_runs_the_command_unmonitored_and_says_so(workdir):
    # `-S`: no site-packages, so no torch; the script itself needs none
    script = workdir / "no_torch.py"
    script.write_text("print('hello from a script without torch')\n")
    outcome = traindoctor("watch", "--format", "json", "--", PYTHON, "-S", str(script), cwd=workdir)
    assert outcome.code == 0, outcome.stderr
    assert outcome.stdout.splitlines()[0] == "hello from a script without torch"
    assert "Traceback" not in outcome.stderr
    assert "no step monitor: this interpreter cannot import torch" in outcome.stderr
    assert outcome.payload["summary"].startswith("the step monitor did not start")


def test_a_corrupt_batch_is_a_gradient_explosion_at_its_step(workdir):
    run = monitored("watch", "bad_batch.py", cwd=workdir)
    explosion = run.finding("gradient-explosion")
    assert explosion["step"] == 30
    assert explosion["mode"] == "nan-gradient"
    assert "Clip gradients" in " ".join(f["title"] for f in explosion["fixes"])
    # The jump throws the weights so far that the loss overflows a few steps later: the explosion
    # is named at the corrupt batch, before the NaN onset it causes.
    assert run.finding("nan-onset")["step"] > explosion["step"]


def test_a_gan_generator_going_nan_is_named_at_its_own_step(workdir):
    # The discriminator's optimizer steps first each iteration and is the one followed; the
    # generator's loss is inf at iteration 12 while the discriminator's is still finite there.
    outcome = monitored("watch", "gan_nan.py", cwd=workdir)
    nan = outcome.finding("nan-onset")
    assert nan["step"] == 12
    facts = nan["details"]["facts"]
    assert facts["series"] == "loss (Adam of Generator)" and facts["value"] == "inf"
    assert facts["parameter"].startswith("Generator.")
    assert (Path(nan["location"]["path"]).name, nan["location"]["code"]) == ("gan_nan.py", "opt_g.step()")
    assert "at_start" not in facts or facts["at_start"] is False
    assert [f["kind"] for f in outcome.payload["findings"]].count("nan-onset") == 1
    # Strict JSON (the live chart parses it in the editor): non-finite values are written as text.
    lines = (Path(outcome.payload["run_dir"]) / "steps.jsonl").read_text().splitlines()
    records = [json.loads(line, parse_constant=lambda name: pytest.fail(f"{name} in steps.jsonl")) for line in lines]
    assert records[11]["others"]["Adam of Generator"]["loss"] == "inf"


def test_stop_on_nan_stops_at_the_generator_step_before_its_update(workdir):
    outcome = monitored("watch", "gan_nan.py", "--stop-on", "nan", cwd=workdir)
    assert outcome.payload["steps"] == 12
    nan = outcome.finding("nan-onset")
    assert nan["step"] == 12 and (Path(nan["location"]["path"]).name, nan["location"]["line"]) == ("gan_nan.py", 46)
    assert "iteration 12" not in outcome.stdout  # stopped in opt_g.step(), before the print


def test_a_mid_epoch_validation_is_not_linked_to_a_never_switched_back_claim(workdir):
    """model.train() runs at every epoch: the run goes back to train mode, so the finding says
    so and links no lint finding claiming that nothing switches it back."""
    outcome = monitored("watch", "eval_mid_epoch.py", cwd=workdir)
    finding = outcome.finding("eval-mode")
    facts = finding["details"]["facts"]
    assert finding["step"] == 6 and facts["back_step"] == 11  # eval after step 5; train() at the next epoch
    assert facts["steps_in_eval"] == 15  # steps 6-10, 16-20, 26-30
    assert "back in train mode at step 11" in finding["root_cause"]
    assert [f["title"] for f in finding["fixes"]] == ["Call model.train() right after each validation"]
    assert all("nothing switches it back" not in f["message"] for f in finding["related_findings"])
    assert [f["code"] for f in finding["related_findings"]] == ["TRN703"]  # its enclosing-loop wording holds
    assert "only in an enclosing loop" in finding["related_findings"][0]["message"]


def test_eval_mode_never_undone_links_trn703(workdir):
    outcome = monitored("watch", "eval_mode.py", cwd=workdir)
    finding = outcome.finding("eval-mode")
    assert finding["details"]["facts"].get("back_step") is None
    assert [f["code"] for f in finding["related_findings"]] == ["TRN703"]
    assert "nothing switches it back" in finding["related_findings"][0]["message"]
