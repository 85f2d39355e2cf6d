"""The failure families of modern training stacks (AMP, torch.compile, FSDP/ZeRO, Hugging Face
set-up, weights_only loading, cuDNN, spawn pickling, version skew) on real-shaped logs."""

from __future__ import annotations

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


def test_calibration_report_is_committed_and_within_target() -> None:
    import re

    report = (DATA.parents[2] / "bench" / "calibration.md").read_text()
    eces = [float(x) for x in re.findall(r"ECE\): \*\*([\d.]+)\*\*", report)]
    assert len(eces) == 3 and eces[2] <= 0.1
