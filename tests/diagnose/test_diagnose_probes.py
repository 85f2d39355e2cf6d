"""The live-probe hook: what a stopped process showed enriches the diagnosis of its traceback."""

from __future__ import annotations

from traindoctor.diagnose import diagnose_text
from traindoctor.model import Frame, ProbeResult, Probes, TensorSummary

ASSERTION = '''Traceback (most recent call last):
  File "/w/train.py", line 30, in <module>
    assert torch.isfinite(loss), "loss diverged"
AssertionError: loss diverged
'''


def test_nan_tensors_turn_an_unrecognised_failure_into_nan_inf() -> None:
    plain = diagnose_text(ASSERTION, correlate=False)
    assert plain.kind == "other"
    probes = Probes(tensors=(TensorSummary("loss", (), "torch.float32", "cpu", nan_count=1),
                             TensorSummary("x", (4, 3), "torch.float32", "cpu", nan_count=0)))
    live = diagnose_text(ASSERTION, probes=probes, correlate=False)
    assert live.kind == "nan-inf"
    assert any("`loss`" in e and "1 NaN" in e for e in live.evidence)
    assert not any("`x`" in e for e in live.evidence)
    assert live.location is not None and live.location.line == 30


def test_memory_env_frame_and_rank_from_probes() -> None:
    env = {"torch": "2.13.0", "cuda_memory": {"allocated": 3 * 1024**3, "reserved": 4 * 1024**3}}
    probes = Probes(results=(ProbeResult("env", True, env),), frame=Frame("/w/loop.py", 12, "step", is_user=True),
                    rank=3)
    diagnosis = diagnose_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
                              probes=probes, correlate=False)
    assert diagnosis.kind == "cuda-oom"
    assert "live CUDA memory: allocated 3.00 GiB, reserved 4.00 GiB" in diagnosis.evidence
    assert diagnosis.details["live_env"]["torch"] == "2.13.0"
    assert diagnosis.location == probes.frame  # the text had no user frame
    assert diagnosis.rank == 3


def test_failed_probes_are_ignored() -> None:
    probes = Probes(results=(ProbeResult("cuda_memory", False, error="timed out"), ProbeResult("env", False)))
    diagnosis = diagnose_text(ASSERTION, probes=probes, correlate=False)
    assert diagnosis.kind == "other" and "internal_error" not in diagnosis.details
