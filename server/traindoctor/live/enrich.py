"""The live front's name for the one probes -> evidence pass (diagnose/probe_evidence.py):
`enrich(diagnosis, probes)` adds what a stopped process showed to a Diagnosis built without
probes; `probes_json(probes)` is what the probes read, as the panel shows it."""

from __future__ import annotations

from ..diagnose.probe_evidence import enrich, probes_json

__all__ = ["enrich", "probes_json"]
