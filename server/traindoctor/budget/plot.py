"""A PNG of memory over one step's ops, stacked by category, phases shaded (matplotlib, Agg)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..monitor.plot import PlotError
from .render import size

_COLORS = {"parameters": "#4c72b0", "buffers": "#8172b3", "gradients": "#dd8452", "optimizer_state": "#55a868",
           "activations": "#c44e52", "temporaries": "#937860"}
_PHASE_SHADES = ("#ffffff", "#f0f0f0", "#e0e8f0")


def plot(report: dict[str, Any], out: str | Path, title: str = "") -> Path:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotError("--plot needs matplotlib (pip install 'traindoctor[plot]')") from None
    timeline = report["timeline"]
    points = timeline["points"]
    if not points:
        raise PlotError("nothing to plot: the step's timeline is empty")
    categories = timeline["categories"]
    gib = float(1 << 30)
    xs = list(range(len(points)))
    series = [[p[1 + i] / gib for p in points] for i in range(len(categories))]
    figure, axis = plt.subplots(figsize=(10, 5), dpi=100)
    start = 0
    for index in range(1, len(points) + 1):  # shade each run of one phase
        if index == len(points) or points[index][0] != points[start][0]:
            phase = timeline["phases"][points[start][0]]
            axis.axvspan(start, index - 1, color=_PHASE_SHADES[points[start][0] % 3], zorder=0)
            axis.text((start + index - 1) / 2, 0.99, phase, transform=axis.get_xaxis_transform(), ha="center",
                      va="top", fontsize=9, color="#555555")
            start = index
    axis.stackplot(xs, series, labels=[c.replace("_", " ") for c in categories],
                   colors=[_COLORS[c] for c in categories], alpha=0.85, zorder=2)
    capacity = (report["gpu_memory_bytes"] - report["reserve_bytes"]) / gib
    top = max(sum(p[1:]) for p in points) / gib
    if capacity <= top * 1.6:
        axis.axhline(capacity, color="black", linestyle="--", linewidth=1, zorder=3)
        axis.text(0, capacity, f" usable on {report['gpu']['name']}", va="bottom", fontsize=8)
    axis.set_xlim(0, max(1, len(points) - 1))
    axis.set_ylim(0, max(top, min(capacity, top * 1.6)) * 1.12)
    axis.set_xlabel(f"ops of one training step ({timeline['ops']} ops, sampled)")
    axis.set_ylabel("GiB")
    verdict = "fits" if report["fits"] else "does not fit"
    axis.set_title(title or f"Peak {size(report['peak_bytes'])} in the {report['peak_phase']} phase: {verdict} "
                   f"on {report['gpu']['name']}")
    axis.legend(loc="upper left", fontsize=8, bbox_to_anchor=(0, 0.93))
    figure.tight_layout()
    out = Path(out)
    try:
        figure.savefig(out)
    except OSError as exc:
        raise PlotError(f"cannot write {out}: {exc.strerror or exc}") from None
    finally:
        plt.close(figure)
    return out
