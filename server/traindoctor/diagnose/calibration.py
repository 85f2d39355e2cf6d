"""Raw confidence -> calibrated confidence.

A signature's `confidence` (adjusted for a missing location, a missing exception line, a
correlated lint finding) is only a score. `rules/calibration.yaml` maps it to the share of
hypotheses with that score that named the right kind on the labelled logs; the map is
fitted by `bench/calibration.py --fit` (isotonic: never decreasing) and is data.
`coherent` then keeps the hypotheses of one diagnosis consistent: a log fails of one kind.
"""

from __future__ import annotations

import bisect
import functools

import yaml

from ..catalog import rules_dir


# Two maps: a signature's confidence (the message was read) and a partial-evidence score (the
# message is missing, partial.py) mean different things, so each has its own fitted curve.
_MAPS = {"signature": "points", "partial": "partial_points"}


@functools.cache
def _points(source: str = "signature") -> tuple[tuple[float, float], ...]:
    path = rules_dir() / "calibration.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        points = tuple(sorted((float(a), float(b)) for a, b in data.get(_MAPS[source]) or ()))
    except (OSError, yaml.YAMLError, TypeError, ValueError):
        return ()
    return points


def calibrated(raw: float, source: str = "signature") -> float:
    """Piecewise-linear through the fitted points of `source`'s map; the identity when there is
    no map."""
    points = _points(source)
    if not points:
        return raw
    xs = [p[0] for p in points]
    i = bisect.bisect_left(xs, raw)
    if i <= 0:
        return points[0][1]
    if i >= len(points):
        return points[-1][1]
    (x0, y0), (x1, y1) = points[i - 1], points[i]
    return y0 if x1 == x0 else y0 + (y1 - y0) * (raw - x0) / (x1 - x0)


_LISTED = 0.01


def coherent(kinds: list[str], confidences: list[float]) -> list[float]:
    """Confidences of ranked hypotheses (their kinds, their calibrated confidences) that a
    probability allows: one failure has one kind, so a kind takes at most what the kinds ranked
    before it leave (but at least 0.01: listed, it is not ruled out); a hypothesis of a kind already listed (another cause of it) has that kind's
    confidence."""
    by_kind: dict[str, float] = {}
    left = 1.0
    for kind, confidence in zip(kinds, confidences):
        if kind not in by_kind:
            by_kind[kind] = max(_LISTED, min(confidence, left))
            left = max(0.0, left - by_kind[kind])
    return [by_kind[kind] for kind in kinds]
