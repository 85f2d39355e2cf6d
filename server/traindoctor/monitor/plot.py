"""A PNG of a run's curves with the findings marked (matplotlib, Agg backend: no display needed).

`layout(run, findings)` decides what is drawn (panels, units, axis names, notes, where each
finding's label goes) without matplotlib, so tests can check it; `plot()` draws it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .series import RunData, Series

# One panel per kind of series; loss first.
_PANELS = (("loss", ("loss", "val_loss")), ("gradient norm", ("grad_norm",)), ("learning rate", ("lr",)),
           ("memory", ("memory",)))
_BYTES = ((1024 ** 3, "GiB"), (1024 ** 2, "MiB"), (1024, "KiB"))
# Finding labels sit in rows above the top panel; two labels closer than this share of the
# x range go to different rows.
_LABEL_GAP = 0.12
_LABEL_ROWS = 3


class PlotError(RuntimeError):
    """matplotlib is missing or the file cannot be written (one line for the user)."""


@dataclass
class Line:
    name: str
    steps: list[int]
    values: list[float]  # finite values only, in the panel's unit
    nonfinite_steps: list[int]


@dataclass
class Panel:
    label: str  # the y axis name, with its unit: "memory (MiB)"
    lines: list[Line]
    log_scale: bool = False
    from_zero: bool = False  # memory: the axis starts at 0, so a change reads against the whole


@dataclass
class Marker:
    step: int
    text: str  # "nan-onset"
    row: int  # 0 = the row just above the top panel


@dataclass
class Layout:
    panels: list[Panel]
    x_label: str  # from the source's own column: "step", "epoch", "global_step"
    x_unit: tuple[float, str]  # (divisor, suffix) for the tick labels: (1e3, "k")
    markers: list[Marker] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # series that have no axis, and why


def byte_unit(largest: float) -> tuple[float, str]:
    """The binary unit a byte count of this size reads best in."""
    return next(((size, name) for size, name in _BYTES if largest >= size), (1, "bytes"))


def step_unit(largest: float) -> tuple[float, str]:
    if largest >= 1e6:
        return 1e6, "M"
    if largest >= 1e4:
        return 1e3, "k"
    return 1, ""


def layout(run: RunData, findings: list[Any]) -> Layout:
    panels, notes = [], []
    for label, roles in _PANELS:
        members: list[Series] = [s for role in roles for s in run.of_role(role)]
        drawn = []
        for series in members:
            finite = series.finite()
            if not finite:
                notes.append(f"{series.name}: no finite value ({len(series.values)} points, all NaN or inf): "
                             "not plotted")
                continue
            nonfinite = [s for s, v in zip(series.steps, series.values) if not math.isfinite(v)]
            drawn.append(Line(series.name, [s for s, _ in finite], [v for _, v in finite], nonfinite))
        if not drawn:
            continue
        if label == "memory":
            divisor, unit = byte_unit(max(abs(v) for line in drawn for v in line.values))
            for line in drawn:
                line.values = [v / divisor for v in line.values]
            label = f"memory ({unit})"
        values = [v for line in drawn for v in line.values]
        log_scale = all(v > 0 for v in values) and max(values) / max(min(values), 1e-300) > 1e3
        panels.append(Panel(label, drawn, log_scale, from_zero=label.startswith("memory") and not log_scale))
    x_names = sorted({s.x_name for role in ("loss", "val_loss", "grad_norm", "lr", "memory") for s in run.of_role(role)})
    x_label = " / ".join(x_names) or "step"
    steps = [s for panel in panels for line in panel.lines for s in line.steps + line.nonfinite_steps]
    markers = _markers(findings, (min(steps), max(steps)) if steps else (0, 1))
    return Layout(panels, x_label, step_unit(max((abs(s) for s in steps), default=0)), markers, notes)


def _markers(findings: list[Any], span: tuple[int, int]) -> list[Marker]:
    """One label per finding with a step, in rows so that no two labels overlap."""
    width = max(span[1] - span[0], 1)
    markers: list[Marker] = []
    last_in_row: dict[int, float] = {}
    for finding in sorted((f for f in findings if f.step is not None), key=lambda f: f.step):
        at = (finding.step - span[0]) / width
        row = next((r for r in range(_LABEL_ROWS) if at - last_in_row.get(r, -1.0) >= _LABEL_GAP), None)
        if row is None:  # every row is taken here: the label goes with the last marker's
            markers[-1].text += f", {finding.diagnosis.kind}"
            continue
        last_in_row[row] = at
        markers.append(Marker(finding.step, finding.diagnosis.kind, row))
    return markers


def plot(run: RunData, findings: list[Any], out: str | Path, title: str = "") -> Path:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter
    except ImportError:
        raise PlotError("--plot needs matplotlib (pip install '/path/to/traindoctor[plot]')") from None
    drawn = layout(run, findings)
    if not drawn.panels:
        reason = "; ".join(drawn.notes) if drawn.notes else "no loss, gradient norm, learning rate or memory series found"
        raise PlotError(f"nothing to plot: {reason}")
    rows = max((m.row for m in drawn.markers), default=-1) + 1
    height = 2.8 * len(drawn.panels) + 0.3 * rows + 0.25 * len(drawn.notes)
    figure, axes = plt.subplots(len(drawn.panels), 1, figsize=(9, height), sharex=True, squeeze=False)
    divisor, suffix = drawn.x_unit
    for panel, axis in zip(drawn.panels, axes[:, 0]):
        for line in panel.lines:
            axis.plot(line.steps, line.values, label=line.name, linewidth=1.2)
        if panel.log_scale:
            axis.set_yscale("log")
        else:
            axis.ticklabel_format(axis="y", useOffset=False)  # a 0.6 MiB change must not look like a leak
        if panel.from_zero:
            axis.set_ylim(bottom=0, top=max(v for line in panel.lines for v in line.values) * 1.08)
        for line in panel.lines:
            if line.nonfinite_steps:
                axis.scatter(line.nonfinite_steps, [axis.get_ylim()[1]] * len(line.nonfinite_steps), marker="x",
                             color="red", s=12, label=f"{line.name}: non-finite", clip_on=False)
        axis.set_ylabel(panel.label)
        axis.grid(True, alpha=0.3)
        for marker in drawn.markers:
            axis.axvline(marker.step, color="red", linestyle="--", linewidth=0.9, alpha=0.7)
        axis.legend(loc="best", fontsize=7)
    top = axes[0, 0]
    for marker in drawn.markers:
        top.annotate(f"{marker.text} ({drawn.x_label} {marker.step:,})", xy=(marker.step, 1.0),
                     xycoords=("data", "axes fraction"), xytext=(0, 4 + 12 * marker.row),
                     textcoords="offset points", fontsize=7, color="red", ha="center", va="bottom")
    bottom = axes[-1, 0]
    bottom.xaxis.set_major_formatter(FuncFormatter(lambda value, _pos: _tick(value, divisor, suffix)))
    bottom.set_xlabel(drawn.x_label)
    if drawn.notes:
        figure.text(0.01, 0.005, "\n".join(drawn.notes), fontsize=7, va="bottom", ha="left", color="dimgray")
    figure.suptitle(title or "traindoctor curves", fontsize=10)
    figure.tight_layout(rect=(0, 0.03 * len(drawn.notes), 1, 1))
    path = Path(out)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=100)
    except OSError as exc:
        raise PlotError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(figure)
    return path


def _tick(value: float, divisor: float, suffix: str) -> str:
    if divisor == 1 or value == 0:
        return f"{value:g}"
    return f"{value / divisor:g}{suffix}"
