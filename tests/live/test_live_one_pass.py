"""Probes become evidence in one pass: the language server (DAP bodies forwarded by the editor),
`traindoctor run`/`attach` (diagnose_probes) and diagnose_text(probes=...) give the same Diagnosis,
and each tensor holding NaN/inf is listed once."""

from __future__ import annotations

import json

from traindoctor.diagnose import diagnose_text
from traindoctor.live.from_dap import build_probes, diagnose_from_dap, diagnose_probes, parse_probe_results

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/w/train.py", line 30, in <module>\n    assert torch.isfinite(loss), "loss diverged"\n'
    "AssertionError: loss diverged\n"
)
TENSORS = [{"name": f"t{i}", "shape": [4], "dtype": "torch.float32", "device": "cpu", "nan_count": 1 + i,
            "inf_count": 0, "scope": "frame"} for i in range(8)]
ENV = {"torch": "2.13.0", "cuda_memory": {"allocated": 3 << 30, "reserved": 4 << 30}, "dist": {"rank": 2}}


def _answer(value) -> dict:
    return {"result": repr(json.dumps(value))}  # how debugpy returns a probe's str


def test_every_front_gets_the_same_evidence_from_the_same_probes() -> None:
    bodies = {"traceback": _answer(TRACEBACK), "tensors": _answer(TENSORS), "env": _answer(ENV)}
    from_editor = diagnose_from_dap({}, {"stackFrames": []}, bodies, correlate=False)
    probes = build_probes(parse_probe_results(bodies))
    from_run = diagnose_probes(TRACEBACK, probes, correlate=False)
    from_text = diagnose_text(TRACEBACK, probes=probes, correlate=False)
    assert from_editor.to_json() == from_run.to_json() == from_text.to_json()
    assert from_text.kind == "nan-inf" and from_text.rank == 2
    nan_lines = [e for e in from_text.evidence if "NaN" in e and e.startswith("Tensor ")]
    named = [t["name"] for t in TENSORS if any(f"`{t['name']}`" in e for e in nan_lines)]
    assert len(nan_lines) == len(named) == 6  # each listed once, the first six
    assert "live CUDA memory: allocated 3.00 GiB, reserved 4.00 GiB" in from_text.evidence
    assert from_text.details["probes"]["env"]["torch"] == "2.13.0"
    assert "Live: `t0` is the first tensor in the frame holding NaN/inf" in from_text.root_cause
    assert from_text.hypotheses[0].cause == from_text.root_cause
