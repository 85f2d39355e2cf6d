"""Real training scripts that really fail on CPU (torch 2.13): run them, diagnose their stderr."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from traindoctor.diagnose import diagnose_text

from diagnose_helpers import REPO, SCRIPTS, free_port, line_of, run_failing, run_script

pytestmark = pytest.mark.slow

# script, expected kind, the code on the user line the diagnosis must point at, a fix substring,
# a value from the message that must reach the title or root cause
CASES = [
    ("shape_mismatch.py", "shape-mismatch", "logits = model(inputs)", "nn.Linear(32, 10)", "has 32 features"),
    ("dtype_mismatch.py", "dtype-mismatch", "pred = model(features)", ".float()", "Double where Float"),
    ("backward_twice.py", "graph-reuse", "loss_b.backward()", "retain_graph=True", "second .backward()"),
    ("inplace_modification.py", "inplace-modification", "loss.backward()", "x = x * 2", "produced by Sigmoid"),
    ("no_grad_backward.py", "no-grad", "loss.backward()", "torch.no_grad()", "does not require grad"),
    # the location is the forward op anomaly mode names, not the backward call
    ("nan_anomaly.py", "nan-inf", "loss = (torch.sqrt(scale) * mask).sum()", "clamp_min", "SqrtBackward0"),
    ("state_dict_mismatch.py", "checkpoint-mismatch", "model.load_state_dict(torch.load(path))", "strict=False",
     "checkpoint [64, 10], model [32, 10]"),
    ("dataloader_worker.py", "dataloader-worker", "raise ValueError(", "num_workers=0", "sample 37: corrupt record"),
    ("nondeterministic.py", "nondeterminism", "restored = unpool(pooled, indices)", "warn_only=True",
     "max_unpooling2d_forward_out"),
    # 4e14 bytes, flagged as a wrong size computation
    ("host_oom.py", "host-oom", "buffer = torch.empty(", "size computation", "363.80 TiB"),
]


@pytest.mark.parametrize("script, kind, code, fix, value", CASES, ids=[c[0] for c in CASES])
def test_real_failure(tmp_path: Path, script: str, kind: str, code: str, fix: str, value: str) -> None:
    stderr = run_script(script, tmp_path)
    diagnosis = diagnose_text(stderr, base_dir=tmp_path)
    assert diagnosis.kind == kind, (diagnosis.title, stderr[-2000:])
    assert diagnosis.location is not None
    assert Path(diagnosis.location.path) == SCRIPTS / script
    assert diagnosis.location.line == line_of(SCRIPTS / script, code)
    assert diagnosis.location.is_user
    assert any(fix in f.title + " " + f.detail for f in diagnosis.fixes), [f.detail for f in diagnosis.fixes]
    assert value in diagnosis.title + " " + diagnosis.root_cause, (diagnosis.title, diagnosis.root_cause)
    assert diagnosis.confidence >= 0.8
    assert diagnosis.exception is not None


def _torchrun(tmp_path: Path, *args: str) -> str:
    torchrun = Path(sys.executable).with_name("torchrun")
    return run_failing([str(torchrun), "--nproc-per-node", "2", "--master-port", str(free_port()),
                        str(SCRIPTS / "torchrun_rank_failure.py"), *args], tmp_path, timeout=120)


def test_torchrun_rank_failure(tmp_path: Path) -> None:
    log = _torchrun(tmp_path)
    diagnosis = diagnose_text(log, base_dir=tmp_path)
    script = SCRIPTS / "torchrun_rank_failure.py"
    assert diagnosis.kind == "distributed"
    assert diagnosis.rank == 1
    assert diagnosis.location is not None and Path(diagnosis.location.path) == script
    assert diagnosis.location.line == line_of(script, 'raise RuntimeError(f"shard')
    assert diagnosis.exception is not None and "corrupt header" in diagnosis.exception.message
    assert "Rank 1 failed first" in diagnosis.root_cause
    # what the other rank was doing: waiting in all_reduce, then cut off
    assert "0" in diagnosis.details["ranks"]
    assert diagnosis.details["root_cause_rank"] == 1
    assert any("@record" in f.detail or "record" in f.detail for f in diagnosis.fixes)


def _root_cause_names_the_other_rank(log: str) -> str:
    """The same torchrun log with its two failure blocks swapped: "Root Cause (first observed failure)"
    names the rank that only lost its peer. torchrun orders failures by their error files' time in whole
    seconds, so a failing rank that takes the other down within the same second ties, and it then names
    the lower rank (seen once under CI load)."""
    root_marker = "-" * 60 + "\nRoot Cause (first observed failure):\n"
    if "rank      : 0 (local_rank: 0)" in log.split(root_marker)[1]:
        return log  # this run's tie already named rank 0
    head, rest = log.split("Failures:\n", 1)
    failures, root = rest.split(root_marker, 1)
    root, tail = root.split("=" * 60, 1)
    first_block, root_block = failures.split("\n", 1)[1], root.split("\n", 1)[1]
    return (f"{head}Failures:\n[1]:\n{root_block}{root_marker}[0]:\n{first_block}" + "=" * 60 + tail)


def test_a_tie_in_torchruns_root_cause_does_not_blame_the_rank_that_lost_its_peer(tmp_path: Path) -> None:
    log = _root_cause_names_the_other_rank(_torchrun(tmp_path))
    assert "rank      : 0 (local_rank: 0)" in log.split("Root Cause (first observed failure)")[1]  # the control
    diagnosis = diagnose_text(log, base_dir=tmp_path)
    assert diagnosis.rank == 1 and diagnosis.details["root_cause_rank"] == 1
    assert "corrupt header" in diagnosis.exception.message


def test_torchrun_rank_with_specific_error(tmp_path: Path) -> None:
    diagnosis = diagnose_text(_torchrun(tmp_path, "shape"), base_dir=tmp_path)
    script = SCRIPTS / "torchrun_rank_failure.py"
    assert diagnosis.kind == "shape-mismatch"
    assert diagnosis.rank == 1
    assert diagnosis.location is not None and diagnosis.location.line == line_of(script, "torch.randn(4, 3) @")
    assert "(4x3) @ (5x2)" in diagnosis.title
