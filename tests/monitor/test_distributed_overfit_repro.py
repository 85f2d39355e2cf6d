"""`traindoctor overfit` and `traindoctor repro` on real 2-rank DDP jobs (gloo, CPU), under each launcher:
torchrun, `python -m torch.distributed.run`, `accelerate launch` and `torch.multiprocessing.spawn`."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest

from monitor_helpers import PYTHON, SCRIPTS, Outcome, traindoctor

pytestmark = pytest.mark.slow

def free_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


# Ports of their own: test_distributed.py's jobs use torchrun's default port 29500, and xdist runs the
# two files at the same time (two jobs on one port join each other's rendezvous).
TORCHRUN = (str(Path(PYTHON).parent / "torchrun"), "--standalone", "--nproc-per-node", "2")
MODULE_RUN = (PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2")
ACCELERATE = (str(Path(PYTHON).parent / "accelerate"), "launch", "--multi_gpu", "--num_machines", "1",
              "--num_processes", "2", "--main_process_port", free_port(), "--mixed_precision", "no",
              "--dynamo_backend", "no")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dist-overfit")
    shutil.copy(SCRIPTS / "ddp_train.py", folder / "ddp_train.py")
    return folder


def job(command: str, workdir: Path, launcher: tuple[str, ...], *script: str, options: tuple[str, ...]) -> Outcome:
    return traindoctor(command, "--format", "json", "--timeout", "150", *options, "--", *launcher, *script,
                       cwd=workdir, timeout=420)


def assert_every_rank_ran(payload: dict, steps: int) -> None:
    run_dir = Path(payload["run_dir"])
    for rank in (0, 1):  # each rank ran under the monitor, which stopped it after the asked steps
        records = (run_dir / f"rank-{rank}" / "steps.jsonl").read_text().splitlines()
        assert len(records) == steps, (rank, len(records))


@pytest.mark.parametrize("launcher", [TORCHRUN, ACCELERATE], ids=["torchrun", "accelerate"])
def test_overfit_a_ddp_job_fits_its_first_batch_on_every_rank(workdir, launcher):
    if launcher is ACCELERATE:
        pytest.importorskip("accelerate")
    outcome = job("overfit", workdir, launcher, str(workdir / "ddp_train.py"), "healthy", "500",
                  options=("--steps", "80"))
    payload = outcome.payload
    assert (payload["command"], payload["verdict"]) == ("overfit", "fits"), outcome.stderr
    assert payload["loss_last"] < 0.05 * payload["loss_first"] and payload["steps"] == 80
    assert payload["findings"] == []
    assert_every_rank_ran(payload, 80)
    assert outcome.code == 0


def test_overfit_an_mp_spawn_job_fits(workdir):
    outcome = job("overfit", workdir, (PYTHON,), str(SCRIPTS / "spawn_train.py"), "healthy", "500",
                  options=("--steps", "80"))
    payload = outcome.payload
    assert payload["verdict"] == "fits", outcome.stderr
    assert_every_rank_ran(payload, 80)
    assert outcome.code == 0


def test_repro_of_a_seeded_ddp_job_is_identical(workdir):
    outcome = job("repro", workdir, MODULE_RUN, str(workdir / "ddp_train.py"), "healthy", "500",
                  options=("--steps", "12"))
    payload = outcome.payload
    assert (payload["command"], payload["verdict"]) == ("repro", "identical"), outcome.stderr
    assert payload["checksums"][0] == payload["checksums"][1]
    for run_dir in payload["run_dirs"]:
        assert_every_rank_ran({"run_dir": run_dir}, 12)
    assert outcome.code == 0


def test_repro_of_a_ddp_job_with_unseeded_augmentation_differs_from_the_first_step(workdir):
    outcome = job("repro", workdir, TORCHRUN, str(workdir / "ddp_train.py"), "unseeded", "500",
                  options=("--steps", "6"))
    payload = outcome.payload
    assert payload["verdict"] == "differs", outcome.stderr
    assert payload["first_differing_step"] == 1
    assert payload["checksums"][0] != payload["checksums"][1]
    assert any("Python's `random` module" in f["title"] for f in payload["findings"]), payload["findings"]
    assert outcome.code == 1


def test_repro_of_an_mp_spawn_job_is_identical(workdir):
    outcome = job("repro", workdir, (PYTHON,), str(SCRIPTS / "spawn_train.py"), "healthy", "500",
                  options=("--steps", "6"))
    assert outcome.payload["verdict"] == "identical", outcome.stderr
    assert outcome.code == 0
