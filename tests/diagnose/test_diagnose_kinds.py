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
