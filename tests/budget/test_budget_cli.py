"""`traindoctor budget` on real training scripts: a CUDA script on this CPU-only machine, the report in
text, JSON and PNG, the levers, a GPU too small, what the fake step cannot follow, bad input."""

from __future__ import annotations

import subprocess

import pytest
import torch

from budget_helpers import PYTHON, SCRIPTS, budget, env

pytestmark = pytest.mark.slow

KEYS = ("peak_bytes", "by_category", "peak_phase", "by_module", "flops", "gpu_memory_bytes", "fits", "max_batch",
        "levers", "unaccounted")
CATEGORIES = {"parameters", "buffers", "gradients", "optimizer_state", "activations", "temporaries"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("budget-cli")


@pytest.fixture(scope="module")
def gpt(workdir):
    """The small GPT, written for a GPU (--device cuda), with every lever and a plot."""
    png = workdir / "gpt.png"
    code, report, stderr = budget("--gpu", "l4", "--plot", str(png), "--", PYTHON, str(SCRIPTS / "train_model.py"),
                                  "--model", "gpt", "--batch", "4", "--device", "cuda", cwd=workdir)
    assert report is not None, stderr
    return code, report, stderr, png


def test_a_cuda_script_is_estimated_on_a_cpu_only_machine(gpt):
    code, report, stderr, png = gpt
    assert not torch.cuda.is_available()
    assert code == 0 and report["fits"] and report["gpu"]["name"] == "NVIDIA L4"
    assert all(key in report for key in KEYS)
    assert set(report["by_category"]) == CATEGORIES
    assert report["peak_bytes"] == sum(report["by_category"].values())
    assert report["peak_phase"] in ("forward", "backward", "optimizer")
    assert report["by_module"][0]["name"].startswith("GPT.blocks.")
    assert report["flops"] > 0
    # progress while it ran
    assert "measuring step 2: base" in stderr and "measuring step 3: batch x2" in stderr


def test_the_largest_batch_comes_from_a_checked_line(gpt):
    report = gpt[1]
    line = report["batch_line"]
    assert [b for b, _ in line["points"]] == [4, 8, 16]
    # The total is not a line: at batch 4 and 8 the forward phase peaks (the previous step's gradients are
    # still alive, zero_grad comes after the forward), at 16 the backward's temporaries take over.
    assert [r for r in line["points"]] != sorted(line["points"], key=lambda p: p[1] / p[0])
    assert set(line["phases"]) == {"forward", "backward", "optimizer"}
    assert line["linear"] is True and line["deviation"] < 0.05  # but each phase's peak is
    capacity = report["gpu_memory_bytes"] - report["reserve_bytes"]
    at = lambda batch: max(f["fixed"] + f["per_sample"] * batch for f in line["phases"].values())  # noqa: E731
    assert at(report["max_batch"]) <= capacity < at(report["max_batch"] + 1)


def test_levers_are_re_estimated(gpt):
    levers = {lever["name"]: lever for lever in gpt[1]["levers"]}
    assert {"bf16_autocast", "checkpoint", "foreach_off", "set_to_none", "optimizer_8bit",
            "grad_accumulation_2"} <= set(levers)
    base = gpt[1]["peak_bytes"]
    assert levers["checkpoint"]["measured"] and levers["checkpoint"]["peak_bytes"] < base
    assert levers["checkpoint"]["checkpointed"] == [f"GPT.blocks.{i}" for i in range(4)]
    # Measured, not assumed: for this small model at batch 4 the bf16 weight copies autocast keeps cost
    # about what the halved activations save.
    assert levers["bf16_autocast"]["measured"] and levers["bf16_autocast"]["peak_bytes"] != base
    assert levers["set_to_none"]["skipped"]  # the script already sets gradients to None
    assert levers["optimizer_8bit"]["peak_bytes"] < base and not levers["optimizer_8bit"]["measured"]


def test_the_plot_is_a_png(gpt):
    png = gpt[3]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_text_report_and_a_gpu_too_small(workdir):
    command = [PYTHON, "-m", "traindoctor", "budget", "--gpu-memory", "1.02GiB", "--no-levers", "--runs-dir",
               str(workdir / "runs"), "--", PYTHON, str(SCRIPTS / "train_model.py"), "--model", "mlp", "--batch",
               "64", "--device", "cuda"]
    done = subprocess.run(command, cwd=workdir, env=env(), capture_output=True, text=True, timeout=240)
    assert done.returncode == 1, done.stderr  # 1.02 GiB minus the 1 GiB reserve: the step does not fit
    assert "does NOT fit" in done.stderr and "Memory at the peak, by category:" in done.stderr
    assert "Largest batch that fits:" in done.stderr


def test_what_the_fake_step_cannot_follow_is_named(workdir):
    checkpoint = workdir / "init.pt"
    torch.save(torch.nn.Linear(256, 512).state_dict(), checkpoint)
    code, report, stderr = budget("--no-levers", "--", PYTHON, str(SCRIPTS / "unfollowable.py"), str(checkpoint),
                                  cwd=workdir)
    assert report is not None, stderr
    kinds = {note["kind"]: note for note in report["unaccounted"]}
    assert set(kinds) == {"custom op", "data-dependent shape", "value", "checkpoint"}
    assert "traindoctor_test.fused_gelu" in kinds["custom op"]["what"]
    assert kinds["data-dependent shape"]["detail"].endswith("unfollowable.py:29")
    assert kinds["value"]["what"].endswith("unfollowable.py:42")
    assert report["max_batch"] is None and "DataLoader" in report["batch_line"]["reason"]


def test_bad_input_gets_one_line_and_exit_2(workdir):
    code, report, stderr = budget("--gpu", "no-such-gpu", "--", PYTHON, "x.py", cwd=workdir)
    assert code == 2 and report is None and "unknown GPU 'no-such-gpu'" in stderr
    failing = workdir / "fails.py"
    failing.write_text("import torch\nraise SystemExit('no data here')\n")
    code, report, stderr = budget("--", PYTHON, str(failing), cwd=workdir)
    assert code == 2 and report is None
    assert stderr.strip().splitlines()[-1].startswith("traindoctor budget: ")


@pytest.mark.parametrize("strategy", ["ddp", "fsdp2"])
def test_world_size_8_plans_per_rank_memory(strategy, workdir):
    """A torchrun script (init_process_group("nccl"), one GPU per rank) on torch's fake process group."""
    code, report, stderr = budget("--world-size", "8", "--no-levers", "--", PYTHON,
                                  str(SCRIPTS / "train_distributed.py"), "--strategy", strategy, cwd=workdir)
    assert report is not None, stderr
    assert report["world_size"] == 8 and report["distributed"] == strategy
    parameter_bytes = report["parameter_count"] * 4  # fp32
    state = report["steady_state"]
    if strategy == "ddp":
        # replicas: every rank holds all parameters, AdamW's two moments, and the gradients plus DDP's buckets
        assert state["parameters"] == pytest.approx(parameter_bytes, rel=0.01)
        assert state["optimizer_state"] == pytest.approx(2 * parameter_bytes, rel=0.01)
        assert state["gradients"] == pytest.approx(2 * parameter_bytes, rel=0.01)
        assert any(note["kind"] == "DDP" for note in report["unaccounted"])
    else:
        # FSDP2: parameters, gradients and optimizer state sharded over 8 ranks
        assert state["parameters"] == pytest.approx(parameter_bytes / 8, rel=0.02)
        assert state["optimizer_state"] == pytest.approx(2 * parameter_bytes / 8, rel=0.02)
        assert report["by_category"]["parameters"] > state["parameters"]  # a block's all-gathered parameters
    assert any(note["kind"] == "process group" for note in report["unaccounted"])
