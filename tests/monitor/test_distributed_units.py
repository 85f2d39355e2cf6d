"""The torchrun command rewrite and the reading of faulthandler stacks, without starting a job."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from traindoctor.live.launcher import LaunchError, parse_command
from traindoctor.monitor.dist_detectors import parse_faulthandler, rank_wait
from traindoctor.monitor.launchers import TORCHRUN_FLAGS, torchrun_command
from traindoctor.monitor.runner import BOOTSTRAP

SCRIPT = str(Path(__file__).parent / "scripts" / "ddp_train.py")


def command(*args: str):
    return torchrun_command(parse_command([sys.executable, "-m", "torch.distributed.run", *args]))


def test_torchrun_runs_the_bootstrap_with_the_script_as_its_argument():
    job = command("--nproc-per-node", "2", "--standalone", "--max-restarts=0", SCRIPT, "hang", "--lr", "3")
    assert job.launcher_options == ("--nproc-per-node", "2", "--standalone", "--max-restarts=0")
    assert job.argv()[-5:] == [str(BOOTSTRAP), SCRIPT, "hang", "--lr", "3"]
    assert job.argv()[:4] == [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node"]


def test_torchrun_module_mode_becomes_the_bootstrap_s_module_mode():
    job = command("--nproc_per_node=2", "-m", "pkg.train", "--epochs", "1")
    assert job.argv()[-5:] == [str(BOOTSTRAP), "-m", "pkg.train", "--epochs", "1"]
    assert "-m" not in job.launcher_options


@pytest.mark.parametrize("args, reason", [
    (("--no-python", "echo"), "not Python"),
    (("--nproc-per-node",), "needs a value"),
    (("--nproc-per-node", "2"), "needs a training script"),
    (("--nproc-per-node", "2", "missing.py"), "no such script"),
])
def test_bad_torchrun_commands_get_one_line(args, reason):
    with pytest.raises(LaunchError, match=reason):
        command(*args)


def test_torchrun_flags_match_the_installed_torch():
    from torch.distributed.run import get_args_parser

    flags = {s for action in get_args_parser()._actions if action.nargs == 0 for s in action.option_strings}
    assert flags == set(TORCHRUN_FLAGS)


DUMP = """Thread 0x00007f4b00001000 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 331 in wait
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap

Current thread 0x00007f4bf9298b80 (most recent call first):
  File "/v/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 2950 in all_reduce
  File "/v/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", line 83 in wrapper
  File "/home/me/train.py", line 55 in log_loss
  File "/home/me/train.py", line 80 in <module>
  File "<frozen runpy>", line 88 in _run_code
  File "/x/traindoctor/monitor/bootstrap.py", line 93 in <module>
"""


def test_a_rank_s_collective_and_line_come_from_its_main_thread():
    threads = parse_faulthandler(DUMP)
    assert [len(t) for t in threads] == [2, 6]
    wait = rank_wait(0, DUMP)
    assert wait.collective == "all_reduce"
    assert (wait.user.path, wait.user.line, wait.user.function) == ("/home/me/train.py", 55, "log_loss")
    assert wait.where() == "train.py:55"


def test_a_rank_in_backward_waits_in_ddp_s_all_reduce_and_an_empty_dump_did_not_answer():
    backward = DUMP.replace("distributed/distributed_c10d.py\", line 2950 in all_reduce",
                            "autograd/graph.py\", line 979 in _engine_run_backward")
    assert rank_wait(1, backward).collective.startswith("backward()")
    silent = rank_wait(2, "")
    assert (silent.collective, silent.answered, silent.where()) == (None, False, "no stack (it did not answer)")


def test_a_hang_with_no_rank_in_a_collective_still_reads_as_a_hang(tmp_path):
    from traindoctor.monitor.dist_report import detect_job
    from traindoctor.monitor.series import RunData

    sleeping = "\n".join(line for line in DUMP.splitlines() if "torch/distributed" not in line)
    job = RunData("watch", {}, [], {"distributed": {
        "world_size": 2, "ranks": {}, "info": {},
        "hang": {"idle_s": 12.5, "threshold_s": 10, "last_step": {"rank-0": 4, "rank-1": 4},
                 "stacks": {"0": sleeping, "1": sleeping.replace("line 55", "line 57")}}}})
    [hang] = detect_job(job, "watch")
    assert hang.diagnosis.title == "Hang: no rank stepped for 12.5 s, and none is inside a collective"
    assert hang.diagnosis.rank == 1  # rank 1 is not where rank 0 is
    assert "rank 0: not in a collective, at train.py:55" in hang.diagnosis.root_cause
    assert "On CUDA (NCCL) a collective returns to Python before it completes" in hang.diagnosis.root_cause


def test_a_hang_needs_two_identical_dumps_with_a_rank_blocked():
    from traindoctor.monitor.distributed import stacks_show_hang

    evaluating = DUMP.replace("distributed/distributed_c10d.py\", line 2950 in all_reduce",
                              "nn/modules/module.py\", line 1775 in _call_impl")
    assert stacks_show_hang({"0": DUMP, "1": ""}, {"0": DUMP, "1": ""})  # rank 1 exited, rank 0 waits
    assert not stacks_show_hang({"0": DUMP}, {"0": DUMP.replace("line 55", "line 56")})  # it moved
    assert not stacks_show_hang({"0": evaluating}, {"0": evaluating})  # a long validation, no collective
    assert not stacks_show_hang({}, {})
