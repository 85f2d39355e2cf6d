"""The real PyTorch stderr of tests/diagnose/data/real (part of the calibration set) keeps its kind."""

from __future__ import annotations

import pytest

from traindoctor.diagnose import diagnose_text

from diagnose_helpers import DATA, load_yaml

EXPECTED = load_yaml(DATA / "real" / "expected.yaml")


@pytest.mark.parametrize("case", EXPECTED, ids=[c["file"] for c in EXPECTED])
def test_real_log_kind(case: dict) -> None:
    diagnosis = diagnose_text((DATA / "real" / case["file"]).read_bytes(), correlate=False)
    assert diagnosis.kind == case["kind"], (diagnosis.title, diagnosis.root_cause)
