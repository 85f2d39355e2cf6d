"""What the probes read, as values the kinds' `enrich_live` hooks use: a probe's answer of a
type, the tensors holding NaN/inf, a tensor described, the model's memory (what a `Live` adds from them is in kinds/__init__.py). Below kinds/ in
the diagnose layers (probe_evidence.py, which calls the hooks, sits above them).
"""

from __future__ import annotations

from typing import Any

from ..model import Probes, TensorSummary

MAX_LISTED = 6


def probes_value(probes: Probes, name: str, type_: type) -> Any:
    """The value of probe `name` when it answered with a `type_`, else None."""
    result = probes.get(name)
    return result.value if result is not None and result.ok and isinstance(result.value, type_) else None


def dict_items(probes: Probes, name: str) -> list[dict[str, Any]]:
    """The dict entries of a probe that answers a list (modules, optimizers)."""
    return [item for item in probes_value(probes, name, list) or () if isinstance(item, dict)]


def nonfinite_tensors(probes: Probes) -> list[TensorSummary]:
    return [t for t in probes.tensors if (t.nan_count or 0) > 0 or (t.inf_count or 0) > 0]


def shape(t: TensorSummary) -> str:
    return "(" + ", ".join(str(d) for d in t.shape) + ("," if len(t.shape) == 1 else "") + ")"


def describe(t: TensorSummary) -> str:
    return f"`{t.name}` {shape(t)} {t.dtype} on {t.device}"


def numel(t: TensorSummary) -> int:
    n = 1
    for d in t.shape:
        n *= d
    return n
