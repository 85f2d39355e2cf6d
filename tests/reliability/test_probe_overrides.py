"""Live probes read through torch's own paths: no user override runs under a real debugpy stop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reliability_helpers import PYTHON, traindoctor

SCRIPT = Path(__file__).parent / "scripts" / "user_overrides.py"
pytestmark = pytest.mark.slow


def test_probes_call_no_user_override():
    done = traindoctor("run", "--format", "json", "--", PYTHON, str(SCRIPT), timeout=180)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    counts = json.loads(next(line for line in lines if line.startswith("probe-calls: ")).split(": ", 1)[1])
    assert counts == {"__torch_function__": 0, "named_parameters": 0, "__class__": 0, "__str__": 0,
                      "extra_repr": 0}, done.stderr
    payload = json.loads(lines[-1])
    probes = payload["diagnosis"]["details"]["probes"]
    batch = next(t for t in probes["tensors"] if t["name"] == "batch")
    assert batch["shape"] == [2, 4]
    model = next(m for m in probes["modules"] if m["name"] == "model")
    assert model["params"] == 15  # read through torch.nn.Module's own named_parameters
    assert done.returncode == 1
