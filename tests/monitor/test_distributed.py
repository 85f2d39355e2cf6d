"""`traindoctor watch -- torchrun ...`: a real 2-rank DDP job (gloo, CPU) per planted failure."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from monitor_helpers import PYTHON, SCRIPTS, Outcome, env, traindoctor

pytestmark = pytest.mark.slow

TORCHRUN = str(Path(PYTHON).parent / "torchrun")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dist")
    # A copy of its own: the `ps` checks look for this path, which no other test runs.
    shutil.copy(SCRIPTS / "ddp_train.py", folder / "ddp_train.py")
    return folder


def watch(workdir: Path, mode: str, *options: str, steps: int = 20, launcher: tuple[str, ...] = (TORCHRUN,)) -> Outcome:
    # A port of its own for each job: xdist may run two of these tests at once, and two jobs on
    # torchrun's default port 29500 join each other's rendezvous.
    ranks = ("--num_processes", "2", "--main_process_port", free_port()) if "launch" in launcher else \
        ("--standalone", "--nproc-per-node", "2")
    return traindoctor("watch", "--format", "json", "--timeout", "150", *options, "--", *launcher, *ranks,
                       str(workdir / "ddp_train.py"), mode, str(steps), cwd=workdir, timeout=200)


def free_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def left_over(workdir: Path) -> list[str]:
    """Processes still running the job's script (`ps`)."""
    listing = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    return [line for line in listing.splitlines() if str(workdir / "ddp_train.py") in line]


def line_of(workdir: Path, text: str) -> int:
    lines = (workdir / "ddp_train.py").read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)


def kinds(outcome: Outcome) -> list[tuple[str, int | None]]:
    return [(f["kind"], f["rank"]) for f in outcome.payload["findings"]]


def test_healthy_two_rank_ddp_job_is_quiet(workdir):
    outcome = watch(workdir, "healthy", launcher=(PYTHON, "-m", "torch.distributed.run"))
    payload = outcome.payload
    assert payload["findings"] == [], outcome.stderr
    assert payload["verdict"] == "ok" and outcome.code == 0
    assert payload["steps"] == 20
    dist = payload["distributed"]
    assert dist["world_size"] == 2 and sorted(dist["ranks"]) == ["0", "1"]
    assert all(rank["steps"] == 20 and rank["exit_code"] == 0 for rank in dist["ranks"].values())
    run_dir = Path(payload["run_dir"])
    for rank in (0, 1):  # each rank wrote its own records, with the parameters' checksums
        records = [json.loads(line) for line in (run_dir / f"rank-{rank}" / "steps.jsonl").read_text().splitlines()]
        assert [r["step"] for r in records] == list(range(1, 21))
        assert [r["step"] for r in records if "param_checksum" in r] == [1, 10, 20]
    assert "on each of 2 ranks" in payload["summary"]


def test_rank0_only_all_reduce_hang_names_each_rank_and_stops_the_job(workdir):
    started = time.monotonic()
    outcome = watch(workdir, "hang", "--hang-after", "4")
    hang = outcome.payload["findings"]
    assert [(f["kind"], f["rank"]) for f in hang] == [("distributed-hang", 1)], outcome.stderr
    ranks = hang[0]["details"]["ranks"]
    all_reduce, barrier = line_of(workdir, "dist.all_reduce(loss"), line_of(workdir, "dist.barrier()")
    assert (ranks["0"]["collective"], ranks["0"]["line"]["line"]) == ("all_reduce", all_reduce)
    assert (ranks["1"]["collective"], ranks["1"]["line"]["line"]) == ("barrier", barrier)
    assert hang[0]["title"] == (f"Hang: rank 1 never reached `all_reduce` (ddp_train.py:{all_reduce}), "
                                "where rank 0 waited")
    assert hang[0]["location"]["code"].startswith("dist.all_reduce(")
    assert outcome.payload["distributed"]["steps"] == 4 and outcome.payload["distributed"]["hang"]
    assert outcome.code != 0
    assert time.monotonic() - started < 190
    assert left_over(workdir) == []


def test_a_long_evaluation_without_steps_is_not_a_hang(workdir):
    outcome = watch(workdir, "slow-eval", "--hang-after", "3", steps=8)
    assert outcome.payload["findings"] == [], outcome.stderr
    assert outcome.code == 0 and outcome.payload["distributed"]["steps"] == 8


def test_ctrl_c_stops_every_rank(workdir):
    # --hang-after: only the Ctrl-C may stop this job (at load 8 the hang detector's 60 s ran out first: exit 1)
    # faulthandler prints every thread's stack on SIGABRT: if the stop ever times out again (it did
    # once in a fresh-clone CI run, never alone or under a CPU hog), the failure says where it waited.
    stderr = (workdir / "ctrl-c.stderr").open("wb")
    child = subprocess.Popen([PYTHON, "-X", "faulthandler", "-m", "traindoctor", "watch", "--hang-after", "900",
                              "--runs-dir", str(workdir / "ctrl-c"), "--",
                              TORCHRUN, "--standalone", "--nproc-per-node", "2", str(workdir / "ddp_train.py"),
                              "hang", "20"],
                             cwd=workdir, env=env(), stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 120
        beats: list[Path] = []
        while time.monotonic() < deadline:  # both ranks stepped (and now hang): interrupt then
            beats = list((workdir / "ctrl-c").glob("*/rank-*/heartbeat"))
            if len(beats) == 2 and all(b.read_text().split()[:1] == ["4"] for b in beats):
                break
            time.sleep(0.5)
        assert len(beats) == 2
        assert len(left_over(workdir)) >= 2
        child.send_signal(signal.SIGINT)
        try:
            code = child.wait(120)  # a stop, not a speed: 60 s ran out once on a machine at load 8
        except subprocess.TimeoutExpired:
            processes = left_over(workdir)
            child.send_signal(signal.SIGABRT)
            child.wait(30)
            tail = (workdir / "ctrl-c.stderr").read_text(errors="replace")[-6000:]
            pytest.fail(f"watch did not stop 120 s after SIGINT; job processes then: {processes}\n{tail}")
        assert code == 130
    finally:
        if child.poll() is None:
            child.kill()
        stderr.close()
    assert left_over(workdir) == []


def test_nan_on_one_rank_names_that_rank(workdir):
    outcome = watch(workdir, "nan", steps=8)
    nan = outcome.finding("nan-onset")
    assert (nan["rank"], nan["step"]) == (1, 6)
    assert nan["details"]["facts"]["series"] == "loss"
    # DDP's all-reduce carried rank 1's NaN into rank 0's gradients at the same step.
    assert nan["details"]["also_on_ranks"] == [{"rank": 0, "step": 6}]


def test_weight_changed_outside_ddp_is_a_desync_at_its_first_check(workdir):
    outcome = watch(workdir, "desync", steps=12)
    assert kinds(outcome) == [("distributed-desync", 1)], outcome.stderr
    desync = outcome.payload["findings"][0]
    assert desync["step"] == 10
    facts = desync["details"]["facts"]
    assert facts["parameter"] == "DistributedDataParallel.module.2.weight"
    assert (facts["equal_at"], facts["differing"]) == (1, 1)


def test_slow_loader_on_one_rank_is_a_data_straggler(workdir):
    outcome = watch(workdir, "straggler", steps=12)
    straggler = outcome.finding("distributed-straggler")
    assert straggler["rank"] == 1 and straggler["details"]["kind"] == "data"
    assert straggler["title"].startswith("Straggler: rank 1 waits")
    assert outcome.finding("data-starved")["rank"] == 1
    assert {rank for _, rank in kinds(outcome)} == {1}


def test_slow_forward_on_one_rank_is_a_compute_straggler(workdir):
    outcome = watch(workdir, "slow-compute", steps=12)
    assert kinds(outcome) == [("distributed-straggler", 1)], outcome.stderr
    straggler = outcome.payload["findings"][0]
    assert straggler["details"]["kind"] == "compute"
    assert straggler["title"].startswith("Straggler: rank 1 computes slower")


def test_mp_spawn_processes_are_ranks_and_a_nan_names_its_rank(workdir):
    outcome = traindoctor("watch", "--format", "json", "--timeout", "150", "--", PYTHON,
                          str(SCRIPTS / "spawn_train.py"), "nan", cwd=workdir, timeout=200)
    nan = outcome.finding("nan-onset")
    assert (nan["rank"], nan["step"]) == (1, 6)
    dist = outcome.payload["distributed"]
    assert (dist["launcher"], dist["world_size"], dist["steps"]) == ("mp.spawn", 2, 10)
    assert "spawned run done" in outcome.stdout


def test_a_loader_without_distributed_sampler_feeds_every_rank_the_same_data(workdir):
    outcome = watch(workdir, "same-data", steps=6)
    assert kinds(outcome) == [("distributed-same-data", None)], outcome.stderr
    same = outcome.payload["findings"][0]
    assert same["details"]["facts"]["shapes"] == "16x16, 16x1"
    assert same["location"]["code"] == "for x, y in loader:"


def test_accelerate_launch_runs_every_rank_with_the_monitor(workdir):
    pytest.importorskip("accelerate")
    accelerate = str(Path(PYTHON).parent / "accelerate")
    outcome = watch(workdir, "nan", steps=8, launcher=(accelerate, "launch", "--multi_gpu", "--num_machines", "1",
                                                      "--mixed_precision", "no", "--dynamo_backend", "no"))
    nan = outcome.finding("nan-onset")
    assert (nan["rank"], nan["step"]) == (1, 6)
    assert outcome.payload["distributed"]["launcher"] == "accelerate launch"


def test_mp_spawn_hang_is_reported_and_its_ranks_stopped(workdir):
    outcome = traindoctor("watch", "--format", "json", "--timeout", "150", "--hang-after", "4", "--", PYTHON,
                          str(SCRIPTS / "spawn_train.py"), "hang", cwd=workdir, timeout=200)
    hang = outcome.finding("distributed-hang")
    assert hang["rank"] == 1
    assert (hang["details"]["ranks"]["0"]["collective"], hang["details"]["ranks"]["1"]["collective"]) == (
        "all_reduce", "barrier")
    run_dir = Path(outcome.payload["run_dir"])
    pids = [json.loads((run_dir / f"rank-{r}" / "rank.json").read_text())["pid"] for r in (0, 1)]
    assert not any(Path(f"/proc/{pid}").exists() for pid in pids)
    assert outcome.code != 0
