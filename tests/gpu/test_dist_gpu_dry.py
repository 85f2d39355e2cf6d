"""tests/gpu/dist_gpu.py on CPU (--dry-run: gloo, 2 ranks): the GPU script's own path, one case."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "dist_gpu.py"


def test_dry_run_reports_the_hang_of_a_rank_stuck_outside_any_collective(tmp_path):
    out = tmp_path / "dry.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), "--dry-run", "--only", "hang-sleep"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(out.read_text())
    assert (summary["ranks"], summary["device"], summary["failures"]) == (2, "cpu", [])
    hang = summary["results"][0]["payload"]["findings"][0]
    ranks = hang["details"]["ranks"]
    assert ranks["0"]["collective"] == "all_reduce"
    assert ranks["1"]["collective"] is None  # in time.sleep: "not in a collective, at ddp_train.py:N"
    assert "rank 1 is at ddp_train.py:" in hang["root_cause"]
