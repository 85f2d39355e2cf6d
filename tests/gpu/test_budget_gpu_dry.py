"""CI runs the GPU check in its dry mode: the same prediction and real-run path on CPU, no GPU numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "budget_gpu.py"


def test_dry_run_predicts_runs_and_writes_the_table_and_json(tmp_path):
    out = tmp_path / "dry.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--models", "mlp", "--out", str(out)],
                          capture_output=True, text=True, timeout=280,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    assert result["dry_run"] and not result["errors"]
    assert [(r["model"], r["batch"]) for r in result["rows"]] == [("mlp", 8), ("mlp", 16)]
    assert all(r["predicted_bytes"] > 0 and r["real_bytes"] is None and not r["real_error"] for r in result["rows"])
    claim = result["claims"][0]
    assert claim["max_batch"] >= 1 and claim["at_max"] == "ran (CPU: not checked)"
    assert "budget vs real" in done.stdout and "mlp" in done.stdout
