"""The failure families of modern training stacks (AMP, torch.compile, FSDP/ZeRO, Hugging Face
set-up, weights_only loading, cuDNN, spawn pickling, version skew) on real-shaped logs."""

from __future__ import annotations

import json

import pytest

from traindoctor.diagnose import diagnose_text

from diagnose_helpers import DATA, load_yaml

EXPECTED = load_yaml(DATA / "kinds" / "expected.yaml")


@pytest.mark.parametrize("case", EXPECTED, ids=[c["file"] for c in EXPECTED])
def test_kind(case: dict) -> None:
    diagnosis = diagnose_text((DATA / "kinds" / case["file"]).read_bytes(), correlate=False)
    assert diagnosis.kind == case["kind"], diagnosis.title
    if case["frame"] is None:
        assert diagnosis.location is None
    else:
        assert diagnosis.location is not None, diagnosis.frames
        assert (diagnosis.location.path, diagnosis.location.line) == (case["frame"]["path"], case["frame"]["line"])
    fixes = " ".join(f"{f.title} {f.detail}" for f in diagnosis.fixes)
    assert case["fix"] in fixes, fixes
    if "title" in case:
        assert case["title"] in diagnosis.title, diagnosis.title


def test_every_new_kind_has_a_log() -> None:
    from traindoctor.diagnose import KINDS

    new = {"amp", "compile", "sharded", "hf-setup", "weights-only-load", "cudnn", "multiprocessing-pickle",
           "version-skew"}
    assert new <= set(KINDS)
    assert new <= {c["kind"] for c in EXPECTED}


def test_safe_globals_fix_names_the_class_from_the_message() -> None:
    diagnosis = diagnose_text((DATA / "kinds" / "weights_only_namespace.log").read_text(), correlate=False)
    first = diagnosis.fixes[0]
    assert "torch.serialization.add_safe_globals([argparse.Namespace])" in first.detail
    assert "import argparse" in first.detail
    assert "MyConfig" not in " ".join(f.detail for f in diagnosis.fixes)


def test_hypotheses_are_ranked_and_the_first_is_the_diagnosis() -> None:
    diagnosis = diagnose_text((DATA / "kinds" / "cudnn_not_initialized.log").read_text(), correlate=False)
    kinds = [h.kind for h in diagnosis.hypotheses]
    assert kinds[:2] == ["cudnn", "cuda-oom"]  # NOT_INITIALIZED usually hides an OOM
    assert diagnosis.hypotheses[0].confidence == diagnosis.confidence
    assert diagnosis.hypotheses[0].fixes == diagnosis.fixes
    confidences = [h.confidence for h in diagnosis.hypotheses]
    assert confidences == sorted(confidences, reverse=True)
    assert all(h.fixes for h in diagnosis.hypotheses)
    by_kind = {h.kind: h.confidence for h in diagnosis.hypotheses}
    # one failure, one kind: the kinds share at most 1 (each listed one keeps 0.01; 2-digit rounding)
    assert sum(by_kind.values()) <= 1.0 + 0.01 * len(by_kind)
    assert all(h.confidence >= 0.01 for h in diagnosis.hypotheses)


def test_another_cause_of_the_same_kind_has_that_kind_s_confidence() -> None:
    diagnosis = diagnose_text((DATA / "formats" / "killed.log").read_text(), correlate=False)
    first, second = diagnosis.hypotheses[:2]
    assert first.kind == second.kind == "host-oom" and first.cause != second.cause
    assert second.confidence == first.confidence
    raws = diagnosis.details["raw_confidences"]
    assert raws[1] == raws[0]


def test_an_aborted_nccl_communicator_is_a_consequence_not_a_setup_failure() -> None:
    diagnosis = diagnose_text((DATA / "formats" / "srun_labels.log").read_text(), correlate=False)
    assert diagnosis.kind == "cuda-oom"
    assert [h.kind for h in diagnosis.hypotheses] == ["cuda-oom"]  # rank 0's abort is no second hypothesis
    assert diagnosis.details["ranks"]["0"].startswith("torch.distributed.DistBackendError: NCCL communicator was aborted")
    assert "pretrain.py:270" in diagnosis.details["ranks"]["0"]  # rank 0's own frame, not rank 1's interleaved one
    setup = diagnose_text("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1275, "
                          "internal error, NCCL version 2.14.3\n", correlate=False)
    assert setup.details["signature"] == "distributed-nccl-error"
    assert setup.title == "NCCL failed in a collective: an internal check failed"


def test_calibration_report_is_committed_and_within_target() -> None:
    import re

    report = (DATA.parents[2] / "bench" / "calibration.md").read_text()
    calibrated = [float(x) for x in re.findall(r"### Calibrated[^\n]*\n[^#]*?ECE\): \*\*([\d.]+)\*\*", report)]
    assert len(calibrated) == 3  # 2-fold and leave-one-file-out cross-validated, in-sample
    assert all(ece <= 0.1 for ece in calibrated)


def test_a_log_with_only_loss_curves_is_diagnosed_with_a_kind_diagnose_names(tmp_path):
    """`diagnose` on a log with no traceback falls back to the curve detectors: their kinds are
    part of diagnose.KINDS, and the CLI exits 0 (diagnosed), not 1 (unrecognised)."""
    import subprocess
    import sys

    from traindoctor.diagnose import KINDS
    from traindoctor.diagnose.signatures import KINDS as TRACEBACK_KINDS

    log = tmp_path / "train.log"
    log.write_text("".join(f"epoch {i} loss: {v}\n" for i, v in enumerate(["2.31", "1.9", "1.5", "nan", "nan"], 1)))
    done = subprocess.run([sys.executable, "-m", "traindoctor", "diagnose", str(log), "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    diagnosis = json.loads(done.stdout)
    assert diagnosis["kind"] == "nan-onset" and diagnosis["kind"] in KINDS
    assert diagnosis["kind"] not in TRACEBACK_KINDS
    assert KINDS[-1] == "other" and set(TRACEBACK_KINDS) <= set(KINDS)


@pytest.mark.parametrize("message, title, first_specific_fix", [
    ("NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, unhandled system error "
     "(run with NCCL_DEBUG=INFO for details), NCCL version 2.14.3\nncclSystemError: System call (e.g. socket, "
     "malloc) or external library call failed or device error.\nLast error:\nError while creating shared memory "
     "segment /dev/shm/nccl-vzIpS6 (size 9637888)",
     "a system call failed", "Give the container shared memory, and pin the interface"),
    ("NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, invalid usage, NCCL version 2.10.3\n"
     "ncclInvalidUsage: This usually reflects invalid usage of NCCL library (such as too many async ops, too many "
     "collectives at once, mixing streams in a group, etc).", "invalid usage", "One GPU per rank"),
    ("NCCL error in: ../torch/lib/c10d/ProcessGroupNCCL.cpp:825, unhandled cuda error, NCCL version 2.7.8",
     "a CUDA call inside NCCL failed", "Find the CUDA error on this rank first"),
])
def test_an_nccl_library_error_is_explained_by_its_error_class(message, title, first_specific_fix):
    # the error class torch prints decides the explanation; "use a free port" fits none of them
    diagnosis = diagnose_text(f"torch.distributed.DistBackendError: {message}\n", correlate=False)
    assert diagnosis.kind == "distributed" and title in diagnosis.title
    fixes = [f.title for f in diagnosis.fixes]
    assert fixes[1] == first_specific_fix and "Use a free port" not in fixes
    if "shared memory segment" in message:
        assert "Error while creating shared memory segment" in diagnosis.root_cause
