"""Traceback diagnosis: a crash log (or live probes) -> a Diagnosis.

Public API:

- `diagnose_text(text, *, probes=None, correlate=True, base_dir=None) -> Diagnosis`:
  never raises; garbage or empty input gives kind "other" with low confidence.
  `base_dir` resolves relative frame paths for lint correlation (default cwd).
- `render_text(diagnosis) -> str`: title, `path:line`, root cause, numbered fixes.
- `traindoctor.diagnose.record.write_record(diagnosis, directory, source_text=None) -> Path`.
- `parse_tracebacks(text) -> list[Traceback]`: every traceback chain in a log.
- `KINDS`: the kinds `diagnose` can name: the `kind`s of rules/signatures/*.yaml (tracebacks),
  then those of the curve detectors in rules/monitors/*.yaml (a log with no traceback), "other" last.

`location` is the deepest frame in the user's own code (not site-packages, the
stdlib, torch or a launcher), as printed; for a NaN caught by anomaly mode it is
the forward line anomaly mode names (the backward call is in
details["raise_location"]); for a DataLoader worker error, the dataset line.

`details` (free-form, JSON-safe) may hold: "signature" (the matching signature
id), "facts" (values extracted from the message), "progress" (last epoch/step
before the failure), "ranks" (rank -> what it was doing), "root_cause_rank",
"timed_out_ranks", "memory_bytes" (OOM sizes in bytes), "state_dict" (missing /
unexpected / size-mismatched keys), "inner_kind" (a worker error's own kind),
"line_to_change" (the correlated lint finding), "raise_location",
"internal_error"; with probes: "probes" (what they read), "live_cuda_memory",
"live_env", "worker", "memory" (an OOM's arithmetic).

Knowledge (patterns, templates, fixes) lives in rules/signatures/*.yaml; what a kind
needs beyond data, in its hooks module under diagnose/kinds/ (see kinds/__init__.py).
"""

from .engine import diagnose_text
from .parse import parse_tracebacks
from .render import render_text


def __getattr__(name: str):
    if name == "KINDS":  # computed from the catalogs: signatures, then curve detectors
        from ..monitor.rules import load_monitor_rules
        from .signatures import kinds

        traceback_kinds = kinds()[:-1]
        curve_kinds = [r.kind for r in load_monitor_rules().values() if "curves" in r.sources]
        return (*dict.fromkeys([*traceback_kinds, *curve_kinds]), "other")
    raise AttributeError(name)


__all__ = ["KINDS", "diagnose_text", "parse_tracebacks", "render_text"]
