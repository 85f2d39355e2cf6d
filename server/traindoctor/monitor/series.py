"""What detectors read: named series of (step, value) and, for monitored runs, the raw records."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# What a series measures, from its name (logs name the same thing many ways).
ROLES = ("loss", "val_loss", "grad_norm", "lr", "memory", "other")
_VAL = re.compile(r"(?i)(^|[^a-z])(val|valid|validation|eval|test|dev)([^a-z]|$)")


def role_of(name: str) -> str:
    lowered = re.sub(r" \([^)]*\)$", "", name.lower())  # "loss (run2.log)": the same metric from another file
    if "loss" in lowered:
        return "val_loss" if _VAL.search(lowered) else "loss"
    if lowered in ("lr", "learning_rate") or lowered.startswith(("lr-", "lr_", "lr/", "learning_rate")) \
            or lowered.endswith(("/lr", "_lr", "-lr", "learning_rate")):
        return "lr"
    if "grad" in lowered and "norm" in lowered:
        return "grad_norm"
    if lowered in ("rss", "cuda_allocated", "memory"):
        return "memory"
    return "other"


def to_float(value: Any) -> float | None:
    """A number, or "nan"/"inf" as watch writes them; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


@dataclass(frozen=True)
class Series:
    name: str
    steps: tuple[int, ...]
    values: tuple[float, ...]
    # Where each point came from in its file (1-based line), when it came from a text log.
    lines: tuple[int, ...] = ()
    origin: str = ""  # the file it was read from (curves); the optimizer's label (watch, `others`)
    # What `steps` count, named as the source names it: "step", "global_step", "epoch"; "point"
    # when the source has no such column and the values are numbered in the order they come.
    x_name: str = "step"

    @property
    def role(self) -> str:
        return role_of(self.name)

    def finite(self) -> list[tuple[int, float]]:
        return [(s, v) for s, v in zip(self.steps, self.values) if math.isfinite(v)]

    def first_nonfinite(self) -> int | None:
        return next((i for i, v in enumerate(self.values) if not math.isfinite(v)), None)


@dataclass
class RunData:
    """One run, as detectors see it."""

    source: str  # "watch" or "curves"
    series: dict[str, Series]
    records: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    files: tuple[str, ...] = ()  # curves: the files read
    other: "RunData | None" = None  # repro: the second run, compared with this one

    def of_role(self, role: str) -> list[Series]:
        return [s for s in self.series.values() if s.role == role and s.values]

    def first(self, role: str, origin: str | None = None) -> Series | None:
        found = [s for s in self.of_role(role) if origin is None or s.origin == origin]
        return found[0] if found else None


def read_records(run_dir: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The per-step records and run metadata a monitored run wrote (partial lines are skipped)."""
    folder = Path(run_dir)
    records: list[dict[str, Any]] = []
    steps = folder / "steps.jsonl"
    if steps.is_file():
        for line in steps.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("step"), int):
                records.append(record)
    meta: dict[str, Any] = {}
    try:
        loaded = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            meta = loaded
    except (OSError, ValueError):
        pass
    return records, meta


def series_from_records(records: list[dict[str, Any]]) -> dict[str, Series]:
    columns: dict[str, list[tuple[int, float]]] = {}
    for record in records:
        step = record["step"]
        for name in ("loss", "grad_norm", "rss", "cuda_allocated", "step_time", "data_time"):
            value = to_float(record.get(name))
            if value is not None:
                columns.setdefault(name, []).append((step, value))
        lrs = record.get("lr")
        if isinstance(lrs, list) and lrs:
            value = to_float(lrs[0])
            if value is not None:
                columns.setdefault("lr", []).append((step, value))
    return {name: Series(name, tuple(s for s, _ in points), tuple(v for _, v in points))
            for name, points in columns.items()}


def other_optimizer_series(records: list[dict[str, Any]]) -> list[Series]:
    """`loss (Adam of Generator)` and `grad_norm (...)`: what `watch` recorded of the optimizers
    it does not follow (a GAN's second one), under `others` in each record. Only the NaN-onset
    detector reads them: a GAN's losses swing by design, so spikes and plateaus would mislead."""
    columns: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for record in records:
        for label, values in (record.get("others") or {}).items():
            for name in ("loss", "grad_norm"):
                value = to_float(values.get(name)) if isinstance(values, dict) else None
                if value is not None:
                    columns.setdefault((name, label), []).append((record["step"], value))
    return [Series(f"{name} ({label})", tuple(s for s, _ in points), tuple(v for _, v in points), origin=label)
            for (name, label), points in columns.items()]


def run_from_dir(run_dir: str | Path) -> RunData:
    records, meta = read_records(run_dir)
    return RunData("watch", series_from_records(records), records, meta)
