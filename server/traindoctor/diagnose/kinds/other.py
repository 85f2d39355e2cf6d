"""Hooks of the fallback kind `other` (rules/signatures/other.yaml): a failure no signature recognises.

`enrich_live`: with no kind to explain it, the failing frame's values are the evidence.
"""

from __future__ import annotations

from . import Live


def enrich_live(live: Live) -> None:
    live.describe_frame()
