"""Real GPU-side tracebacks from public issue threads (data/dev/labels.yaml): kind and frame."""

from __future__ import annotations

import pytest

from traindoctor.diagnose import diagnose_text

from diagnose_helpers import DATA, load_yaml

LABELS = load_yaml(DATA / "dev" / "labels.yaml")


@pytest.mark.parametrize("label", LABELS, ids=[entry["id"] for entry in LABELS])
def test_dev_traceback(label: dict) -> None:
    text = (DATA / "dev" / label["file"]).read_text(encoding="utf-8")
    diagnosis = diagnose_text(text, correlate=False)
    assert diagnosis.kind == label["class"], diagnosis.title
    if label["frame"] is None:
        assert diagnosis.location is None
    else:
        assert diagnosis.location is not None
        assert (diagnosis.location.path, diagnosis.location.line) == (label["frame"]["path"], label["frame"]["line"])
    assert diagnosis.fixes
    assert 0.5 <= diagnosis.confidence <= 1.0


def test_old_oom_message_values() -> None:
    diagnosis = diagnose_text((DATA / "dev" / "tb002.txt").read_text(), correlate=False)
    assert diagnosis.title == "CUDA out of memory: 86.00 MiB requested, 85.81 MiB free of 11.75 GiB on GPU 3"
    assert "10.05 GiB allocated" in diagnosis.root_cause


def test_nccl_timeout_names_every_rank() -> None:
    diagnosis = diagnose_text((DATA / "dev" / "tb037.txt").read_text(), correlate=False)
    assert diagnosis.details["timed_out_ranks"] == [0, 1, 2]
    assert diagnosis.rank is None  # every rank timed out: none is the culprit
    assert "600 s" in diagnosis.title
