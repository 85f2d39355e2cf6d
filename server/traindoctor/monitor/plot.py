"""A PNG of a run's curves with the findings marked (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .series import RunData

# One panel per kind of series; loss first.
_PANELS = (("loss", ("loss", "val_loss")), ("gradient norm", ("grad_norm",)), ("learning rate", ("lr",)),
           ("memory (bytes)", ("memory",)))


class PlotError(RuntimeError):
    """matplotlib is missing or the file cannot be written (one line for the user)."""


def plot(run: RunData, findings: list[Any], out: str | Path, title: str = "") -> Path:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotError("--plot needs matplotlib (pip install 'traindoctor[plot]')") from None
    panels = [(label, [s for role in roles for s in run.of_role(role)]) for label, roles in _PANELS]
    panels = [(label, series) for label, series in panels if series]
    if not panels:
        raise PlotError("nothing to plot: no loss, gradient norm, learning rate or memory series found")
    figure, axes = plt.subplots(len(panels), 1, figsize=(9, 2.8 * len(panels)), sharex=True, squeeze=False)
    for (label, series_list), axis in zip(panels, axes[:, 0]):
        for series in series_list:
            finite = series.finite()
            axis.plot([s for s, _ in finite], [v for _, v in finite], label=series.name, linewidth=1.2)
            bad = [s for s, v in zip(series.steps, series.values) if not math.isfinite(v)]
            if bad:
                axis.scatter(bad, [axis.get_ylim()[1]] * len(bad), marker="x", color="red", s=12,
                             label=f"{series.name}: non-finite")
        positive = all(v > 0 for s in series_list for _, v in s.finite())
        spread = [v for s in series_list for _, v in s.finite()]
        if positive and spread and max(spread) / max(min(spread), 1e-300) > 1e3:
            axis.set_yscale("log")
        axis.set_ylabel(label)
        axis.grid(True, alpha=0.3)
        for finding in findings:
            if finding.step is not None:
                axis.axvline(finding.step, color="red", linestyle="--", linewidth=0.9, alpha=0.7)
        axis.legend(loc="best", fontsize=7)
    top = axes[0, 0]
    for finding in findings:
        if finding.step is not None:
            top.annotate(finding.diagnosis.kind, xy=(finding.step, 1.0), xycoords=("data", "axes fraction"),
                         rotation=90, fontsize=7, color="red", va="top", ha="right")
    axes[-1, 0].set_xlabel("step")
    figure.suptitle(title or "traindoctor curves", fontsize=10)
    figure.tight_layout()
    path = Path(out)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=100)
    except OSError as exc:
        raise PlotError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(figure)
    return path
