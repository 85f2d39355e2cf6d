"""Traceback diagnosis: a crash log (or live probes) -> a Diagnosis.

Public API:

- `diagnose_text(text, *, probes=None, correlate=True, base_dir=None) -> Diagnosis`:
  never raises; garbage or empty input gives kind "other" with low confidence.
  `base_dir` resolves relative frame paths for lint correlation (default cwd).
- `render_text(diagnosis) -> str`: title, `path:line`, root cause, numbered fixes.
- `traindoctor.diagnose.record.write_record(diagnosis, directory, source_text=None) -> Path`.
- `parse_tracebacks(text) -> list[Traceback]`: every traceback chain in a log.
- `KINDS`: the kinds a diagnosis can name.

Knowledge (patterns, templates, fixes) lives in rules/signatures/*.yaml.
"""

from .engine import diagnose_text
from .parse import parse_tracebacks
from .render import render_text
from .signatures import KINDS

__all__ = ["KINDS", "diagnose_text", "parse_tracebacks", "render_text"]
