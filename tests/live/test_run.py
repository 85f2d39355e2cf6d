"""`traindoctor run`: real torch scripts that really fail, under real debugpy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from live_helpers import SCRIPTS, plain, run_json, tensor, traindoctor

pytestmark = pytest.mark.slow


def _location(diagnosis):
    location = diagnosis["location"]
    return Path(location["path"]).name, location["line"], location["function"]


def test_nan_under_anomaly_mode_names_the_nan_tensors():
    outcome = run_json("nan_anomaly.py")
    diagnosis = outcome.diagnosis
    assert diagnosis["kind"] == "nan-inf"
    assert _location(diagnosis) == ("nan_anomaly.py", 11, "train_step")
    # sqrt(out - 10) is NaN everywhere; `root` is the first such tensor in the frame.
    root = tensor(diagnosis, "root")
    assert root["nan_count"] == 8 and root["shape"] == [8, 1]
    assert tensor(diagnosis, "loss")["nan_count"] == 1
    assert tensor(diagnosis, "out")["nan_count"] == 0
    assert "`root` is the first tensor in the frame holding NaN" in diagnosis["root_cause"]
    assert outcome.code == 1


def test_shape_mismatch_reports_the_shapes_and_the_layer():
    outcome = run_json("shape_mismatch.py")
    diagnosis = outcome.diagnosis
    assert diagnosis["kind"] == "shape-mismatch"
    assert _location(diagnosis) == ("shape_mismatch.py", 7, "train_step")
    assert tensor(diagnosis, "inputs")["shape"] == [8, 10]
    evidence = "\n".join(diagnosis["evidence"])
    assert "Linear(in_features=30, out_features=5" in evidence  # the layer that expects 30
    modules = diagnosis["details"]["probes"]["modules"]
    assert modules[0]["name"] == "model" and modules[0]["params"] == 10 * 20 + 20 + 30 * 5 + 5
    optimizers = diagnosis["details"]["probes"]["optimizers"]
    assert optimizers[0]["type"] == "SGD" and optimizers[0]["lr"] == [0.1]
    # The child's stdout streams through before the JSON line.
    assert outcome.stdout.splitlines()[0] == "starting"
    assert outcome.code == 1


def test_host_allocation_failure_shows_the_memory_arithmetic():
    diagnosis = run_json("host_oom.py").diagnosis
    assert diagnosis["kind"] == "host-oom"
    assert _location(diagnosis) == ("host_oom.py", 12, "<module>")
    memory = diagnosis["details"]["memory"]
    params = (256 * 512 + 512 + 512 * 10 + 10) * 4
    assert memory["parameters"] == params
    assert memory["gradients"] == params
    assert memory["optimizer_state"] >= 2 * params  # Adam: exp_avg and exp_avg_sq
    assert memory["requested"] == 4 * (1 << 50)
    assert memory["host_available"] > 0
    assert any(line.startswith("Model memory: parameters") for line in diagnosis["evidence"])
    assert any(line.startswith("Host memory: requested 4.00 PiB") for line in diagnosis["evidence"])


def test_inplace_modification():
    outcome = run_json("inplace.py")
    diagnosis = outcome.diagnosis
    assert diagnosis["kind"] == "inplace-modification"
    assert _location(diagnosis) == ("inplace.py", 16, "<module>")
    assert tensor(diagnosis, "weight")["requires_grad"] is True
    assert outcome.code == 1


def test_dataloader_worker_exception_is_diagnosed_in_the_worker():
    outcome = run_json("dataloader_worker.py")
    diagnosis = outcome.diagnosis
    assert diagnosis["kind"] == "dataloader-worker"
    assert _location(diagnosis)[1:] == (13, "__getitem__")
    process = diagnosis["details"]["process"]
    assert process["worker"] == 0 and process["subprocess"] is True
    # The probes ran in the worker's own frame: its sample tensor is there.
    assert tensor(diagnosis, "sample")["shape"] == [3]
    assert diagnosis["details"]["probes"]["env"]["worker"]["num_workers"] == 2
    assert "Failed in DataLoader worker process 0." in diagnosis["evidence"]
    assert "Values in the failing frame: index = 5." in diagnosis["evidence"]  # the bad sample
    assert outcome.code == 1


@pytest.mark.skipif(shutil.which("torchrun") is None and not (Path(__file__).parents[2] / ".venv/bin/torchrun").exists(),
                    reason="torchrun not installed")
def test_torchrun_names_the_failing_rank():
    outcome = traindoctor(
        "run", "--format", "json", "--", "torchrun", "--standalone", "--nproc-per-node", "2",
        str(SCRIPTS / "torchrun_rank.py"), timeout=90,
    )
    diagnosis = outcome.diagnosis
    assert diagnosis["kind"] == "shape-mismatch"
    assert diagnosis["rank"] == 1
    assert diagnosis["details"]["process"]["rank"] == 1
    assert _location(diagnosis) == ("torchrun_rank.py", 14, "main")
    assert tensor(diagnosis, "features")["shape"] == [3, 4]
    assert tensor(diagnosis, "projection")["shape"] == [5, 2]
    assert outcome.code != 0


def test_mp_spawn_rank_is_diagnosed_in_the_rank():
    # torch.multiprocessing catches the rank's error and re-raises it in the parent;
    # the diagnosis comes from the rank's own stop.
    outcome = run_json("mp_spawn_rank.py")
    diagnosis = outcome.diagnosis
    assert diagnosis["kind"] == "shape-mismatch"
    assert diagnosis["rank"] == 1
    assert _location(diagnosis) == ("mp_spawn_rank.py", 16, "worker")
    assert tensor(diagnosis, "weights")["shape"] == [3, 4]
    assert diagnosis["details"]["process"]["subprocess"] is True
    assert outcome.code == 1


def test_text_output_goes_to_stderr_right_away():
    outcome = traindoctor("run", "--", "python", str(SCRIPTS / "shape_mismatch.py"))
    assert outcome.code == 1
    assert outcome.stdout == "starting\n"
    assert "traindoctor: live diagnosis of pid" in outcome.stderr
    assert "[shape-mismatch" in outcome.stderr
    # The diagnosis comes before the child's own traceback, which still prints.
    assert outcome.stderr.index("live diagnosis") < outcome.stderr.rindex("RuntimeError: mat1 and mat2")


def test_a_run_that_does_not_fail_is_unchanged():
    reference = plain("trains_ok.py")
    outcome = traindoctor("run", "--", "python", str(SCRIPTS / "trains_ok.py"))
    assert outcome.code == 0
    assert outcome.stdout == reference.stdout
    assert "warning line" in outcome.stderr
    assert outcome.stderr.strip().splitlines()[-1] == "traindoctor: no failure: the process exited with code 0"


def test_exit_code_passes_through():
    outcome = run_json("trains_ok.py", "3")
    assert outcome.code == 3 == plain("trains_ok.py", "3").code
    assert outcome.payload == {
        "failure": False, "exit_code": 3, "diagnosis": None,
        "note": "no uncaught Python exception, but the process exited with code 3",
    }


def test_probes_change_nothing_in_the_process():
    reference = plain("probes_readonly.py")
    outcome = run_json("probes_readonly.py")
    assert outcome.code == 1 == reference.code
    # The probes read the failing frame; what the process prints at exit afterwards
    # (next random numbers, autograd versions, grad mode) is exactly as without them.
    diagnosis = outcome.diagnosis
    assert tensor(diagnosis, "scaled")["shape"] == [4]
    assert tensor(diagnosis, "weights")["requires_grad"] is True
    assert outcome.stdout.splitlines()[:-1] == reference.stdout.splitlines()
    assert len(reference.stdout.splitlines()) == 3


def test_handled_exceptions_are_not_failures():
    reference = plain("handled_exception.py")
    outcome = run_json("handled_exception.py")
    assert outcome.code == 0
    assert outcome.stdout.splitlines()[:-1] == reference.stdout.splitlines()
    assert outcome.payload["note"] == (
        "no failure: the process exited with code 0; 20 exception(s) left user code and were handled"
    )


def test_a_process_killed_without_an_exception():
    outcome = traindoctor("run", "--", "python", str(SCRIPTS / "killed.py"))
    assert outcome.code == 137
    assert outcome.stdout == "about to die\n"
    assert "killed by SIGKILL" in outcome.stderr.splitlines()[-1]


def test_record_is_written(tmp_path):
    outcome = traindoctor("run", "--record", str(tmp_path), "--", "python", str(SCRIPTS / "shape_mismatch.py"))
    assert outcome.code == 1
    records = list(tmp_path.glob("*.md"))
    assert len(records) == 1
    assert "shape" in records[0].read_text().lower()


def test_python_dash_m_module(tmp_path):
    (tmp_path / "trainpkg").mkdir()
    (tmp_path / "trainpkg" / "__init__.py").write_text("")
    (tmp_path / "trainpkg" / "train.py").write_text((SCRIPTS / "shape_mismatch.py").read_text())
    outcome = traindoctor("run", "--format", "json", "--", "python", "-m", "trainpkg.train", cwd=tmp_path)
    diagnosis = outcome.diagnosis
    assert diagnosis["kind"] == "shape-mismatch"
    assert _location(diagnosis)[1:] == (7, "train_step")


def test_a_probe_that_times_out_is_recorded_and_the_diagnosis_still_comes():
    outcome = traindoctor("run", "--format", "json", "--probe-timeout", "0.5", "--",
                          "python", str(SCRIPTS / "slow_tensor.py"))
    diagnosis = outcome.diagnosis
    assert diagnosis["kind"] == "shape-mismatch"
    errors = diagnosis["details"]["probes"]["errors"]
    assert errors["tensors"] == "debuggee: no answer to 'evaluate' within 0.5 s"
    assert diagnosis["details"]["probes"]["env"]["torch"].startswith("2.")  # the probe before it answered
    assert outcome.code == 1


def test_a_process_that_dies_while_being_read():
    outcome = traindoctor("run", "--probe-timeout", "30", "--", "python", str(SCRIPTS / "dies_while_probed.py"))
    assert outcome.code == 1
    assert outcome.stderr.strip().splitlines()[-1] == (
        "traindoctor: the process died while traindoctor was reading it (at an exception stop); exit code 1"
    )


def test_lr_1e3_says_the_learning_rate_is_too_high_first():
    """Issue 28, point 5: the optimizer's settings are read live; a learning rate far above its
    family's range is the first thing the root cause says."""
    outcome = run_json("lr_1e3_nan.py")
    diagnosis = outcome.diagnosis
    assert diagnosis["kind"] == "nan-inf"
    live_part = diagnosis["root_cause"].split("Live: ", 1)[1]
    assert live_part.startswith("the learning rate of `optimizer` (1000) is far above the usual range for SGD")
    assert diagnosis["details"]["lr_too_high"] == {"optimizer": "optimizer", "lr": 1000.0}
    evidence = "\n".join(diagnosis["evidence"])
    assert "Optimizer `optimizer` (SGD): lr 1000, weight decay 0.01, momentum 0.9." in evidence
