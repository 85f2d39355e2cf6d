"""A log of a run that did not fail, full of the warnings real runs print, is no failure.

The message-only search (select.py) looks for known failure messages without their
exception line; the warnings torch, cuDNN, NCCL and Hugging Face print on healthy runs
(`Plan failed with a cudnnException`, `weights_only=False` FutureWarning, DDP's
find_unused_parameters) must not be read as failures.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from traindoctor.diagnose import diagnose_text

HEALTHY = Path(__file__).parent / "data" / "healthy"


@pytest.mark.parametrize("log", sorted(HEALTHY.glob("*.log")), ids=lambda p: p.name)
def test_a_healthy_log_with_warnings_is_no_failure(log: Path):
    diagnosis = diagnose_text(log.read_text(encoding="utf-8"), correlate=False)
    assert diagnosis.kind == "other", (diagnosis.kind, diagnosis.evidence)
