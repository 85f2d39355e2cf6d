"""Detector functions: measure a run, return facts. Words and thresholds live in rules/monitors/.

A detector is registered under the id of its YAML file and called as
`detector(run, params, lint)`: `params` is the YAML `params` mapping, `lint`
returns the static findings (with the rule's `related_rules` prefixes) in the
user files the run went through. It returns `Hit`s: the step, the facts its
templates need, and where in the user's code it happened when known.
"""

from __future__ import annotations

import math
import os
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ..model import Finding, Frame
from .series import RunData, Series, other_optimizer_series, to_float

Lint = Callable[[], list[Finding]]
Detector = Callable[[RunData, Mapping[str, Any], Lint], list["Hit"]]

DETECTORS: dict[str, Detector] = {}


@dataclass(frozen=True)
class Hit:
    step: int | None
    facts: dict[str, Any]
    location: Frame | None = None
    related: tuple[Finding, ...] = ()
    details: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    # The detector chose its lint links itself (only rules whose claim holds for this run):
    # `related` is final, even when empty.
    linked: bool = False


def detector(name: str) -> Callable[[Detector], Detector]:
    def register(function: Detector) -> Detector:
        DETECTORS[name] = function
        return function

    return register


# --- formatting --------------------------------------------------------------------------


def num(value: float | None) -> str:
    if value is None:
        return "n/a"
    if not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if value == 0:
        return "0"
    if abs(value) >= 1e5 or abs(value) < 1e-3:
        return f"{value:.3g}"
    return f"{value:.4g}"


def size(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(nbytes) < 1024 or unit == "GiB":
            return f"{nbytes:.1f} {unit}" if unit != "B" else f"{nbytes:.0f} B"
        nbytes /= 1024
    return f"{nbytes:.1f} GiB"


def percent(share: float) -> str:
    return f"{share * 100:.0f}%"


def history(series: Series | None, before_step: int, count: int) -> str | None:
    if series is None:
        return None
    points = [(s, v) for s, v in zip(series.steps, series.values) if s < before_step][-count:]
    return ", ".join(f"{s}: {num(v)}" for s, v in points) or None


def site_frame(site: Any) -> Frame | None:
    if not isinstance(site, dict) or not site.get("path"):
        return None
    code = None
    try:
        with open(site["path"], encoding="utf-8", errors="replace") as handle:
            for number, text in enumerate(handle, 1):
                if number == site.get("line"):
                    code = text.strip()
                    break
    except OSError:
        pass
    return Frame(str(site["path"]), int(site.get("line") or 0), str(site.get("function") or ""), code, True)


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def _record_at(run: RunData, step: int) -> dict[str, Any]:
    return next((r for r in run.records if r.get("step") == step), {})


# --- NaN, spikes, divergence ---------------------------------------------------------------


def _onsets(run: RunData, others: list[Series]) -> list[tuple[int, Series, float]]:
    """The first non-finite point of each loss and gradient-norm series (`others`: those of the
    optimizers `watch` does not follow)."""
    roles = ("loss", "grad_norm") if run.source != "curves" else ("loss", "val_loss")
    out = []
    for role in roles:
        for series in run.of_role(role) + [s for s in others if s.role == role]:
            index = series.first_nonfinite()
            if index is not None:
                out.append((series.steps[index], series, series.values[index]))
    return out


@detector("nan-onset")
def nan_onset(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    others = other_optimizer_series(run.records) if run.source != "curves" else []
    onsets = _onsets(run, others)
    if not onsets:
        return []
    if run.source != "curves":
        onsets = [min(onsets, key=lambda o: (o[0], o[1].role != "loss"))]
    count = int(params.get("history", 5))
    hits = []
    for step, series, value in onsets:
        optimizer = series.origin if run.source != "curves" else ""  # another optimizer's series
        if optimizer:  # its own loss and norms
            own = {s.role: s for s in others if s.origin == optimizer}
            loss, grads = own.get("loss"), own.get("grad_norm")
        else:
            loss = series if series.role in ("loss", "val_loss") else run.first("loss")
            grads = run.first("grad_norm", series.origin if run.source == "curves" else None)
        facts: dict[str, Any] = {"series": series.name.replace("_", " "), "step": step, "value": num(value),
                                 "loss_history": history(loss, step, count),
                                 "grad_history": history(grads, step, count)}
        loss_before = [(s, v) for s, v in (loss.finite() if loss else []) if s < step]
        grads_before = [(s, v) for s, v in (grads.finite() if grads else []) if s < step]
        before = [v for _, v in loss_before]
        facts["at_start"] = not before
        facts.update(_trajectory(loss_before, grads_before))
        if len(before) >= 3 and before[-1] > 2 * min(before) and before[-1] > before[0] and not facts.get("spike"):
            facts["diverged"] = True
            facts["growth"] = f"{num(min(before))} -> {num(before[-1])}"
        location = None
        details: dict[str, Any] = {"series": series.name}
        if run.records:
            # The first step whose gradient is non-finite names the parameter.
            bad = next((r for r in run.records if r.get("nonfinite_grad") and r["step"] >= step - 1), None)
            if bad is not None:
                facts["parameter"] = bad["nonfinite_grad"]
                details["parameter_step"] = bad["step"]
            record = _record_at(run, step)
            onset = next((r["onset"] for r in run.records if isinstance(r.get("onset"), dict)), None)
            if optimizer:
                record, onset = (record.get("others") or {}).get(optimizer) or {}, None
            if record.get("lr"):
                facts["lr"] = ", ".join(num(to_float(v)) for v in record["lr"])
            if onset is not None:
                facts.update(_onset_facts(onset))
            location = site_frame(run.meta.get("backward_site")) or site_frame(run.meta.get("step_site"))
            if optimizer:  # a GAN's generator, say: the line that steps it
                location = site_frame((run.meta.get("other_step_sites") or {}).get(optimizer)) or location
        # An unsafe operation is named only from a steady run and finite inputs (weights, batch).
        facts["unsafe_op"] = bool(facts.get("steady") and facts.get("finite_inputs") and not facts["at_start"]) or None
        if series.lines:
            details["log_line"] = series.lines[series.steps.index(step)]
        hits.append(Hit(step, facts, location, details=details))
    return hits


def _shape(points: list[tuple[int, float]], spike_factor: float = 10.0) -> dict[str, Any]:
    """The shape of a series (loss or gradient norm) before a NaN, from its finite points:
    - `geometric`: it grows by a factor each step (> 1.5) to the end, from its first steps or out of
      a slow rise: what a learning rate that is too high does;
    - `spike`: steady, then one jump of `spike_factor` times its median or more (a bad batch), even
      when it grows geometrically after the jump (the jump threw the weights out);
    - `steady`: no trend, nothing more than 3x apart in its last steps."""
    values = [abs(v) for _, v in points]
    steps = [s for s, _ in points]
    n = len(values)
    if n < 2:
        return {}
    start = n - 1  # the growth at the end starts from values[start]
    while start > 0 and values[start] > 1.5 * values[start - 1] > 0:
        start -= 1
    growing = n - 1 - start
    if growing >= 1:
        prefix = values[max(0, start - 11):start + 1]
        median = statistics.median(prefix)
        if len(prefix) >= 3 and median > 0 and max(prefix) < 3 * median \
                and values[start + 1] >= spike_factor * median:
            return {"shape": "spike", "spike_step": steps[start + 1], "jump": values[start + 1] / median,
                    "after_spike": growing >= 2}
        if growing >= 2:
            factor = (values[-1] / values[start]) ** (1 / growing)
            return {"shape": "geometric", "factor": factor, "growth_step": steps[start]}
    window = values[-12:-1]
    if len(window) >= 3:
        median = statistics.median(window)
        if median > 0 and values[-1] > 5 * median and max(window) < 3 * median:
            return {"shape": "spike", "spike_step": steps[-1], "jump": values[-1] / median, "after_spike": False}
        if max(window + values[-1:]) < 3 * max(min(window + values[-1:]), 1e-12):
            return {"shape": "steady"}
    return {}


def _describe(shape: dict[str, Any]) -> str | None:
    kind = shape.get("shape")
    if kind == "geometric":
        return f"growing geometrically (x{num(shape['factor'])} per step since step {shape['growth_step']})"
    if kind == "spike":
        text = f"steady, then one spike at step {shape['spike_step']} (x{num(shape['jump'])} its median)"
        return text + (", growing after it" if shape.get("after_spike") else "")
    if kind == "steady":
        return "steady"
    return None


def _trajectory(loss: list[tuple[int, float]], grads: list[tuple[int, float]] = ()) -> dict[str, Any]:
    """The verdict from the loss and gradient-norm trajectories before a NaN: a spike in either
    (the earlier one) comes first, a bad batch; else geometric growth in either, a learning rate
    too high; steady only when the loss is steady and the gradient norm is too (or not recorded)."""
    loss_shape, grad_shape = _shape(list(loss)), _shape(list(grads))
    facts: dict[str, Any] = {"trajectory": _describe(loss_shape), "grad_trajectory": _describe(grad_shape)}
    spikes = [s for s in (loss_shape, grad_shape) if s.get("shape") == "spike"]
    geometric = [s for s in (loss_shape, grad_shape) if s.get("shape") == "geometric"]
    if spikes:
        first = min(spikes, key=lambda s: s["spike_step"])
        # a geometric growth that started before the spike is the learning rate, not the batch
        if not any(g["growth_step"] < first["spike_step"] - 1 for g in geometric):
            facts.update(spike=True, spike_step=first["spike_step"])
            return facts
    if geometric:
        fastest = max(geometric, key=lambda g: g["factor"])
        facts.update(geometric=True, factor=num(fastest["factor"]), growth_step=min(g["growth_step"] for g in geometric))
        return facts
    if loss_shape.get("shape") == "steady" and grad_shape.get("shape") in ("steady", None):
        facts["steady"] = True
    return facts


def _onset_facts(onset: Mapping[str, Any]) -> dict[str, Any]:
    """What the monitor read live at the first non-finite step: were the weights and the batch
    finite, the optimizer's settings, the GradScaler's scale."""
    facts: dict[str, Any] = {}
    weights, batch = onset.get("params_finite"), onset.get("batch_finite")
    if weights is not None:
        parts = [f"weights {'finite' if weights else 'already non-finite'}"]
        if batch is not None:
            parts.append(f"batch {'finite' if batch else 'holds NaN/inf'}")
        else:
            parts.append("batch not seen (no DataLoader)")
        facts["inputs"] = ", ".join(parts)
        facts["finite_inputs"] = bool(weights) and batch is not False
        facts["bad_batch"] = batch is False or None
        facts["bad_weights"] = not weights or None
    settings = onset.get("settings") if isinstance(onset.get("settings"), dict) else {}
    shown = [f"{k.replace('_', ' ')} {tuple(v) if isinstance(v, list) else num(v)}" for k, v in settings.items()]
    if shown:
        facts["settings"] = ", ".join(shown)
    scaler = onset.get("scaler") if isinstance(onset.get("scaler"), dict) else None
    if scaler and scaler.get("enabled"):
        facts["scale"] = num(to_float(scaler.get("scale")))
    return facts


def _finite_before_onset(series: Series) -> list[tuple[int, float]]:
    index = series.first_nonfinite()
    points = list(zip(series.steps, series.values))
    return points if index is None else points[:index]


@detector("loss-spike")
def loss_spike(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    window, factor = int(params.get("window", 20)), float(params.get("factor", 3.0))
    minimum = int(params.get("min_history", 10))
    isolated_factor = float(params.get("isolated_factor", 10.0))
    undo, mads = float(params.get("min_undo", 0.25)), float(params.get("min_mads", 10.0))
    hits = []
    for series in run.of_role("loss") + run.of_role("val_loss"):
        points = _finite_before_onset(series)
        start = _median([v for _, v in points[:int(params.get("start_steps", 5))]])
        spikes = []
        for i in range(minimum, len(points)):
            recent = [v for _, v in points[max(0, i - window):i]]
            median = _median(recent)
            spread = _median([abs(v - median) for v in recent])
            value = points[i][1]
            after = points[i + 1][1] if i + 1 < len(points) else None
            # A spike comes back down; a value that stays up is divergence, not a spike. It stands out
            # of the batch-to-batch scatter (a small batch's loss is skewed: 3x its median is common).
            if median > 0 and value > factor * median and after is not None and after < factor * median \
                    and value - median > mads * spread and _undoes_progress(value, median, start, undo):
                spikes.append((i, points[i][0], value, median, spread))
        if not spikes:
            continue
        index, step, value, median, spread = spikes[0]
        following = [v for _, v in points[index + 1:index + 1 + window]]
        # settles higher after it, by more than the scatter before it (in a noisy early phase the
        # median of 20 batches moves by half itself on its own)
        trend = bool(following) and _median(following) > 1.5 * median \
            and _median(following) - median > float(params.get("trend_mads", 5.0)) * spread
        if len(spikes) == 1 and not trend and value < isolated_factor * median:
            continue  # one jump, gone the next step, no trend: the noise of one batch
        facts = {"series": series.name.replace("_", " "), "count": len(spikes), "step": step,
                 "value": num(value), "median": num(median), "ratio": f"{value / median:.1f}",
                 "steps": ", ".join(str(s) for _, s, _, _, _ in spikes[:10])}
        # Clipping answers a gradient that jumped with the loss; without that evidence it is not offered.
        facts["grad_spike"] = _gradient_spiked(run, [s for _, s, _, _, _ in spikes], window, factor) or None
        facts["carried"] = bool(carried_steps(run)) or None
        hits.append(Hit(step, facts, site_frame(run.meta.get("backward_site")),
                        details={"spike_steps": [s for _, s, _, _, _ in spikes]}))
    return hits


def _undoes_progress(value: float, median: float, start: float, share: float) -> bool:
    """A jump above the running median that gives back at least `share` of what the series fell
    since its start. A loss that fell from 1.6 to 0.04 moves by several times itself from batch to
    batch (one hard sample in 64): 0.04 -> 0.13 is that noise, not a spike. A series that has not
    fallen is judged by the ratio alone."""
    progress = start - median
    return not progress > 0 or value - median >= share * progress


def _gradient_spiked(run: RunData, steps: list[int], window: int, factor: float) -> bool:
    """The gradient norm at one of `steps` is `factor` times its running median before it."""
    norms = run.first("grad_norm")
    if norms is None:
        return False
    points = norms.finite()
    at = {s: i for i, (s, _) in enumerate(points)}
    for step in steps:
        i = at.get(step)
        if i is None or i == 0:
            continue
        median = _median([v for _, v in points[max(0, i - window):i]])
        if median > 0 and points[i][1] > factor * median:
            return True
    return False


@detector("divergence")
def divergence(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    factor, share = float(params.get("factor", 2.0)), float(params.get("recent", 0.2))
    hits = []
    for series in run.of_role("loss") + run.of_role("val_loss"):
        points = _finite_before_onset(series)
        if len(points) < int(params.get("min_steps", 15)):
            continue
        recent = points[-max(3, int(len(points) * share)):]
        best_index = min(range(len(points)), key=lambda i: points[i][1])
        best_step, best = points[best_index]
        recent_median = _median([v for _, v in recent])
        first = points[0][1]
        if best_step >= recent[0][0] or best < 0:
            continue
        grew = recent_median > factor * best if best > 0 else recent_median > abs(first)
        if not grew or recent_median <= first * 0.5 + best * 0.5:
            continue
        onset = next(s for s, v in points[best_index:] if v > factor * max(best, 1e-12))
        facts = {"series": series.name.replace("_", " "), "step": onset, "best": num(best),
                 "best_step": best_step, "recent": num(recent_median),
                 "ratio": f"{recent_median / best:.1f}" if best > 0 else "many",
                 "last": num(points[-1][1]), "last_step": points[-1][0]}
        facts.update(_shape_facts(_shape(points[best_index:]), run, onset))
        hits.append(Hit(onset, facts, site_frame(run.meta.get("step_site"))))
    return hits


def _shape_facts(shape: dict[str, Any], run: RunData, step: int) -> dict[str, Any]:
    """Facts of one series' shape for the templates: geometric growth (with the lr read live at
    `step`) or one spike."""
    facts: dict[str, Any] = {"trajectory": _describe(shape), "carried": bool(carried_steps(run)) or None}
    if shape.get("shape") == "geometric":
        facts.update(geometric=True, factor=num(shape["factor"]), growth_step=shape["growth_step"])
    elif shape.get("shape") == "spike":
        facts.update(spike=True, spike_step=shape["spike_step"])
    lrs = _record_at(run, step).get("lr") if run.records else None
    if lrs:
        facts["lr"] = ", ".join(num(to_float(v)) for v in lrs)
    return facts


@detector("gradient-explosion")
def gradient_explosion(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    series = run.first("grad_norm")
    if series is None:
        return []
    window, factor = int(params.get("window", 20)), float(params.get("factor", 10.0))
    early_steps = int(params.get("early_steps", 20))
    points = _finite_before_onset(series)
    for i in range(int(params.get("min_history", 5)), len(points)):
        median = _median([v for _, v in points[max(0, i - window):i]])
        step, value = points[i]
        # Above the level the run trained at in its first steps too: a norm that fell 100x as the
        # loss converged, then jumps 10x on one hard batch, is still smaller than every early step.
        early = _median([v for _, v in points[:min(i, early_steps)]])
        if median > 0 and value > factor * median and value > early:
            facts = {"step": step, "value": num(value), "median": num(median), "ratio": f"{value / median:.0f}",
                     "history": history(series, step, 5)}
            facts.update(_shape_facts(_shape(points[:i + 1]), run, step))
            return [Hit(step, facts, site_frame(run.meta.get("step_site")))]
    return []


# --- runs that do not learn ---------------------------------------------------------------------


def carried_steps(run: RunData) -> list[int]:
    """The checked steps whose gradient still held the previous step's (hooks._GradientCarryProbe);
    empty unless every conclusive check found it so."""
    verdicts = [(r["step"], r["carried_grad"]) for r in run.records if r.get("carried_grad") is not None]
    return [step for step, _ in verdicts] if verdicts and all(carried for _, carried in verdicts) else []


@detector("amp-skipped-steps")
def amp_skipped_steps(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    """GradScaler skipped optimizer steps for longer than its warm-up ever does (hooks._skipped_step)."""
    skips = run.meta.get("amp_skips") or {}
    count, in_a_row, scale = skips.get("count", 0), skips.get("max_in_a_row", 0), to_float(skips.get("scale"))
    if not count or (in_a_row < int(params.get("in_a_row", 20))
                     and not (scale is not None and scale < float(params.get("min_scale", 1.0)) and count >= 10)):
        return []
    applied = int(run.meta.get("steps") or len(run.records))
    facts = {"count": count, "in_a_row": in_a_row, "scale": num(scale), "applied": applied,
             "first_after_step": skips.get("first_after_step", 0), "never_stepped": applied == 0 or None,
             "nonfinite": skips.get("nonfinite_losses", 0), "read": skips.get("losses_read", 0),
             "nonfinite_loss": bool(skips.get("nonfinite_losses")) or None}
    return [Hit(skips.get("first_after_step", 0) + 1, facts,
                site_frame(run.meta.get("backward_site")) or site_frame(run.meta.get("step_site")))]


@detector("gradients-not-reset")
def gradients_not_reset(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    steps = carried_steps(run)
    if len(steps) < int(params.get("min_checks", 2)):
        return []
    site = run.meta.get("backward_site") or {}
    facts = {"step": steps[0], "carried": len(steps), "steps": ", ".join(map(str, steps)),
             "param": run.meta.get("carry_param") or "a parameter",
             "backward_site": f"{site.get('path')}:{site.get('line')}" if site.get("path") else None}
    return [Hit(steps[0], facts, site_frame(run.meta.get("backward_site")) or site_frame(run.meta.get("step_site")))]



def update_ratio(records: list[dict[str, Any]]) -> float | None:
    values = [to_float(v) for r in records for v in (r.get("update_ratio") or {}).values()]
    values = [v for v in values if v is not None and math.isfinite(v)]
    return _median(values) if values else None


def learning_facts(run: RunData, params: Mapping[str, Any]) -> dict[str, Any]:
    """Why a monitored run may not learn: lr 0, parameters without gradients, weights that do not move."""
    records = run.records
    facts: dict[str, Any] = {"steps": len(records)}
    lrs = [to_float(v) for r in records for v in (r.get("lr") or [])]
    if lrs and all(v == 0 for v in lrs):
        facts["lr_zero"] = True
    if records and records[-1].get("lr"):
        facts["lr"] = ", ".join(num(to_float(v)) for v in records[-1]["lr"])
    never = list(run.meta.get("never_grad") or [])
    if never:
        facts["never_grad"] = True
        facts["never_count"] = len(never)
        facts["never"] = ", ".join(never[:6]) + (f" (+{len(never) - 6} more)" if len(never) > 6 else "")
        reaches = run.meta.get("loss_reaches") or {}
        if reaches.get("held") == 0 and reaches.get("not_held"):
            facts["rebuilt"] = True  # the loss trains other tensors: the optimizer holds a stale copy
            facts["not_held"] = reaches["not_held"]
    left_out = [str(name) for name in (run.meta.get("loss_reaches") or {}).get("left_out") or ()]
    if left_out:  # the loss reaches parameters no optimizer holds: they never change
        facts["left_out"] = True
        facts["left_out_count"] = len(left_out)
        facts["left_out_names"] = ", ".join(left_out[:6]) + (f" (+{len(left_out) - 6} more)" if len(left_out) > 6 else "")
    ratio = update_ratio(records[1:] or records)
    if ratio is not None:
        facts["ratio"] = num(ratio)
        if ratio < float(params.get("tiny_ratio", 1e-7)):
            facts["frozen"] = True
            norms = [to_float(r.get("grad_norm")) for r in records]
            norms = [v for v in norms if v is not None and math.isfinite(v)]
            if norms and _median(norms) > 0 and not facts.get("lr_zero"):
                # gradients reach the step, yet the weights do not move: the step size is the lr
                facts["lr_small"] = True
                facts["grad_norm"] = num(_median(norms))
    if records and records[-1].get("zero_grad_params"):
        facts["zero_grads"] = records[-1]["zero_grad_params"]
    loss = run.first("loss")
    losses = [v for _, v in _finite_before_onset(loss)] if loss is not None else []
    facts["finite_steps"] = len(losses)
    if losses:
        head, tail = _median(losses[:3]), _median(losses[-3:])
        facts["first"], facts["last"] = num(head), num(tail)
        facts["flat"] = abs(tail - head) <= float(params.get("flat", 0.02)) * max(abs(head), 1e-12)
    return facts


@detector("no-learning")
def no_learning(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    if len(run.records) < int(params.get("min_steps", 10)):
        return []
    facts = learning_facts(run, params)
    if facts["finite_steps"] < int(params.get("min_steps", 10)):
        return []  # a NaN early on is the story, not learning
    # A flat loss alone is a plateau (curves); these say why nothing can be learned.
    if not any(facts.get(k) for k in ("lr_zero", "never_grad", "frozen", "left_out")):
        return []
    return [Hit(run.records[0]["step"], facts, site_frame(run.meta.get("step_site")))]


@detector("no-progress")
def no_progress(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    """The weights move, nothing else stops learning (no-learning's reasons), yet the loss of a long
    watched run has not fallen and sits at the entropy of the class frequencies of its cross-entropy
    targets (hooks counted them): a classifier that learned only those frequencies. A flat loss at
    any other level is not reported: a converged or resumed run is flat too."""
    loss = run.first("loss")
    points = _finite_before_onset(loss) if loss is not None else []
    if len(points) < int(params.get("min_steps", 150)) or len(points) < len(run.records) * 0.9:
        return []
    facts = learning_facts(run, {})
    if any(facts.get(k) for k in ("lr_zero", "never_grad", "frozen", "left_out")):
        return []  # no-learning says why
    values = [v for _, v in points]
    start = _median(values[:max(5, int(len(values) * float(params.get("head", 0.1))))])
    tail = values[-max(10, int(len(values) * float(params.get("tail", 0.2)))):]
    level, half = _median(tail), len(tail) // 2
    if abs(_median(tail[:half]) - _median(tail[half:])) > float(params.get("flat", 0.05)) * max(level, 1e-12):
        return []  # still moving: on its way down, it may pass through the chance level
    counts = [c for c in run.meta.get("label_counts") or () if isinstance(c, (int, float))]
    total = sum(counts)
    if len(counts) < 2 or total <= 0:
        return []
    chance = -sum(c / total * math.log(c / total) for c in counts if c > 0)
    if chance <= 0 or abs(level - chance) > float(params.get("chance_tolerance", 0.03)) * chance:
        return []
    return [Hit(points[0][0], {"steps": len(points), "start": num(start), "level": num(level),
                               "classes": len(counts), "chance": num(chance), "ratio": facts.get("ratio"),
                               "lr": facts.get("lr")},
                site_frame(run.meta.get("step_site")))]


# --- memory, data, mode ---------------------------------------------------------------------------


def _linear_fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Slope per step and r² of a least-squares line."""
    n = len(points)
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    if sxx == 0 or syy == 0:
        return 0.0, 0.0
    return sxy / sxx, sxy * sxy / (sxx * syy)


@detector("memory-leak")
def memory_leak(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    """Memory that grows at constant work (RSS or CUDA allocated), or a retained autograd graph: a
    tensor of the training loop whose graph holds every step's graph since some step (`graphs` in
    the records, see hooks.retained_graphs). Either one is enough; both are reported together."""
    memory = _memory_growth(run, params)
    graph = _retained_graph(run, params)
    if memory is None and graph is None:
        return []
    facts: dict[str, Any] = {**(memory or {}), **(graph or {})}
    if memory is not None and graph is not None:
        facts["clear_step"] = min(memory["clear_step"], graph["clear_step"])
    findings = lint()
    if graph is not None:  # the lint finding about this very variable first
        named = [f for f in findings if f"`{graph['graph_name']}`" in f.message]
        findings = named + [f for f in findings if f not in named]
    location = site_frame(run.meta.get("step_site"))
    if graph is not None and graph.get("graph_line"):
        location = site_frame({"path": graph["graph_path"], "line": graph["graph_line"]})
    if findings:
        finding = findings[0]
        facts.update({"finding_code": finding.code, "finding_message": finding.message,
                      "finding_place": f"{finding.path}:{finding.range.start.line + 1}",
                      "finding_fix": _rule_fix(finding.code)})
        location = _finding_frame(finding)
    step = graph["graph_origin"] if graph is not None else memory["first_step"]  # type: ignore[index]
    details = {"metric": memory["metric_name"], "slope_bytes": memory["slope_bytes"]} if memory else {}
    if graph is not None:
        details["retained_graph"] = {k: graph[k] for k in ("graph_name", "graph_origin", "graph_nodes",
                                                          "graph_last_step", "graph_nodes_per_step")}
    for key in ("metric_name", "slope_bytes", "graph_path", "graph_nodes_per_step"):
        facts.pop(key, None)
    return [Hit(step, facts, location, tuple(findings), details)]


def _memory_growth(run: RunData, params: Mapping[str, Any]) -> dict[str, Any] | None:
    skip = int(params.get("skip", 3))
    for name, metric in (("cuda_allocated", "CUDA allocated memory"), ("rss", "Process memory (RSS)")):
        series = run.series.get(name)
        if series is None or len(series.values) < int(params.get("min_steps", 20)) + skip:
            continue
        points = list(zip(series.steps, series.values))[skip:]
        slope, r2 = _linear_fit(points)
        growth = points[-1][1] - points[0][1]
        if slope <= 0 or r2 < float(params.get("min_r2", 0.9)) or growth < float(params.get("min_growth_bytes", 2e7)):
            continue
        # RSS pauses while glibc hands freed blocks out again (a 20 MB plateau in a steady 8 KB list
        # leak); what the heaps hold in use (RSS less their free memory) does not: judge the shape on it.
        heap = _heap_samples(run, skip) if name == "rss" else []
        held = [(step, rss - free) for step, rss, free in heap]
        shape = held if len(held) >= int(params.get("min_in_use_samples", 12)) else points
        if not _still_growing(shape, float(params.get("min_tail_ratio", 0.5)), float(params.get("tail_steps", 0.25))):
            continue  # warm-up that levels off, or a cache the program frees
        if name == "rss" and not _in_use_grows(heap, run, params):
            continue  # free memory glibc keeps after many small frees: no live object grows
        return {"metric": metric, "per_step": size(slope), "start": size(points[0][1]),
                "end": size(points[-1][1]), "steps": len(points), "r2": f"{r2:.2f}",
                "first_step": points[0][0], "last_step": points[-1][0],
                "clear_step": _clear_step(points, params), "metric_name": name, "slope_bytes": slope}
    return None


def _heap_samples(run: RunData, skip: int) -> list[tuple[int, float, float]]:
    """(step, RSS, glibc's free heap memory) at the samples that read both."""
    return [(r["step"], float(r["rss"]), float(r["heap_free"])) for r in run.records
            if isinstance(r.get("rss"), (int, float)) and isinstance(r.get("heap_free"), (int, float))][skip:]


def _in_use_grows(both: list[tuple[int, float, float]], run: RunData, params: Mapping[str, Any]) -> bool:
    """Over the later half of the run (`both`: its `_heap_samples`), RSS less the free memory glibc's
    heaps keep (`heap_free`, read at some of the RSS samples: fewer as the heaps fragment and the read
    costs more) grows by at least `min_in_use_share` of what RSS grows over the same samples; True when fewer than
    two such samples tell. Memory freed in many small blocks stays in the heaps, resident, and raises
    RSS while the program holds no more (a replay buffer that replaces its 4 KB states)."""
    if not both:
        return True
    middle = (both[0][0] + run.records[-1]["step"]) / 2
    later = [b for b in both if b[0] >= middle]
    if len(later) < 2:
        return True
    rss_growth = later[-1][1] - later[0][1]
    in_use_growth = (later[-1][1] - later[-1][2]) - (later[0][1] - later[0][2])
    return rss_growth <= 0 or in_use_growth >= float(params.get("min_in_use_share", 0.25)) * rss_growth


def _retained_graph(run: RunData, params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The tensor whose autograd graph holds the graphs of the most steps at the end of the run,
    when it held them without a break for at least `min_graph_steps` steps and its node count grew.
    A chain the program freed during the run (a sum reset each epoch) is a cache it frees: not
    reported on this evidence alone."""
    sampled = [r for r in run.records if "rss" in r or "graphs" in r]
    if not sampled:
        return None
    last_step = sampled[-1]["step"]
    chains: dict[str, list[tuple[int, int, int]]] = {}  # name -> [(step, first step held, nodes or items)]
    in_lists: set[str] = set()  # names of lists of tensors with history (entries [name, first, length, "list"])
    attributes: set[str] = set()  # names of modules' attributes and buffers (entries [name, first, nodes, "attribute"])
    for record in sampled:
        for entry in record.get("graphs") or ():
            if isinstance(entry, list) and len(entry) in (3, 4) and isinstance(entry[0], str):
                chains.setdefault(entry[0], []).append((record["step"], int(entry[1]), int(entry[2])))
                if len(entry) == 4 and entry[3] == "list":
                    in_lists.add(entry[0])
                if len(entry) == 4 and entry[3] == "attribute":
                    attributes.add(entry[0])
    # Modules' attributes are read at some samples only (their cost sets how often): the last of those
    last_module_step = next((r["step"] for r in reversed(sampled) if r.get("modules_scanned")), last_step)
    best = None
    for name, samples in chains.items():
        step, origin, nodes = samples[-1]
        if step != (last_module_step if name in attributes else last_step):
            continue  # not held at the end: freed
        if any(o != origin for _, o, _ in samples):
            continue  # an earlier chain of it was freed: a cache the program frees
        held = [(s, n) for s, o, n in samples]
        if step - origin < int(params.get("min_graph_steps", 10)) or held[-1][1] <= held[0][1]:
            continue
        if best is None or step - origin > best[1][-1][0] - best[1][-1][1]:
            best = (name, samples)
    if best is None:
        return None
    name, samples = best
    points = [(float(s), float(n)) for s, _, n in samples]
    slope = _linear_fit(points)[0] if len(points) >= 2 else 0.0
    origin = samples[-1][1]
    minimum = int(params.get("min_graph_steps", 10))
    clear = next((s for s, _, _ in samples if s - origin >= minimum), samples[-1][0])
    facts: dict[str, Any] = {"graph_name": name, "graph_origin": origin, "graph_nodes": samples[-1][2],
                             "graph_list": name in in_lists or None,
                             "graph_attribute": name in attributes or None,
                             "graph_last_step": samples[-1][0], "graph_steps": samples[-1][0] - origin,
                             "graph_per_step": f"{slope:.0f}" if slope >= 1 else num(slope),
                             "graph_nodes_per_step": slope, "clear_step": clear}
    site = run.meta.get("graph_site")
    if name in attributes:  # searched in the module's class: `self.centers = 0.9 * self.centers + ...`
        site = (run.meta.get("attribute_sites") or {}).get(name)
    if isinstance(site, dict) and site.get("path"):
        line = _assignment_line(str(site["path"]), int(site.get("first_line") or 1),
                                int(site.get("last_line") or 10**9), str(site.get("target") or name))
        if line:
            facts.update({"graph_path": str(site["path"]), "graph_line": line,
                          "graph_place": f"{site['path']}:{line}"})
    return facts


def _assignment_line(path: str, first_line: int, last_line: int, name: str) -> int | None:
    """The first line of the function (lines `first_line`..`last_line`) that updates `name` from
    itself (`name += x`, `name = name + x`, `name = 0.9 * name + ...`) or appends to it."""
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    target = re.escape(name)
    augmented = re.compile(rf"^\s*{target}\s*[-+*/@]=|^\s*{target}\.(append|extend|insert)\(")
    assigned = re.compile(rf"^\s*{target}\s*=(?!=)(.*)$")
    for number in range(max(first_line, 1), min(last_line, len(lines)) + 1):
        text = lines[number - 1]
        match = assigned.match(text)
        if augmented.match(text) or (match and re.search(rf"\b{target}\b", match.group(1))):
            return number
    return None


def _still_growing(points: list[tuple[int, float]], min_tail_ratio: float, tail_steps: float = 0.25) -> bool:
    """Growth at constant work keeps its rate to the end: the last half of the samples grows at
    least `min_tail_ratio` times as fast as the first half (a warm-up levels off), so do the last
    `tail_steps` of the steps (memory is sampled every step at first, then by time: a rise in the
    first epoch and one jump later weigh like steady growth in the halves of the samples), and the
    memory is not given back (a cache the program frees drops below its peak)."""
    half = len(points) // 2
    if half < 3:
        return True
    head, _ = _linear_fit(points[:half])
    tail, _ = _linear_fit(points[half:])
    if head > 0 and tail < min_tail_ratio * head:
        return False
    overall, _ = _linear_fit(points)
    cut = points[-1][0] - tail_steps * (points[-1][0] - points[0][0])
    last = [p for p in points if p[0] >= cut]
    if len(last) >= 3 and overall > 0 and _linear_fit(last)[0] < min_tail_ratio * overall:
        return False
    values = [v for _, v in points]
    growth = values[-1] - values[0]
    return max(values) - values[-1] <= 0.25 * max(growth, 1.0)


def _clear_step(points: list[tuple[int, float]], params: Mapping[str, Any]) -> int:
    """The first step by which the growth was clear: enough steps, growth and a straight line."""
    min_steps = int(params.get("min_steps", 20))
    for end in range(min(min_steps, len(points)), len(points) + 1):
        part = points[:end]
        slope, r2 = _linear_fit(part)
        if (slope > 0 and r2 >= float(params.get("min_r2", 0.9))
                and part[-1][1] - part[0][1] >= float(params.get("min_growth_bytes", 2e7))):
            return part[-1][0]
    return points[-1][0]


def _rule_fix(code: str) -> str:
    try:
        from ..catalog import load_rules

        rule = load_rules().get(code)
    except Exception:
        return ""
    return " ".join(rule.fix.split()) if rule else ""


def _finding_frame(finding: Finding) -> Frame:
    line = finding.range.start.line + 1
    code = None
    try:
        with open(finding.path, encoding="utf-8", errors="replace") as handle:
            code = handle.read().splitlines()[line - 1].strip()
    except (OSError, IndexError):
        pass
    return Frame(finding.path, line, "", code, True)


@detector("data-starved")
def data_starved(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    timed = [r for r in run.records if to_float(r.get("step_time")) and to_float(r.get("data_time")) is not None]
    if len(timed) < int(params.get("min_steps", 5)):
        return []
    total = sum(r["step_time"] for r in timed)
    waited = sum(r["data_time"] for r in timed)
    share = waited / total if total > 0 else 0.0
    data_ms = _median([r["data_time"] for r in timed]) * 1000
    # A DataLoader over tensors in memory collates a batch in well under a millisecond: with a tiny
    # model that is most of a step, but no worker can make it shorter (each costs IPC per batch).
    if share < float(params.get("share", 0.5)) or data_ms < float(params.get("min_data_ms", 1.0)):
        return []
    loaders = run.meta.get("loaders") or []
    if (loaders and loaders[0].get("dataset") in set(params.get("in_memory_datasets") or ())
            and loaders[0].get("collate_fn") in set(params.get("plain_collates") or ())):
        # How long stacking in-memory rows takes depends on the machine and its load, not on
        # anything workers could overlap: the 1 ms floor alone reported a loaded machine's collate.
        return []
    facts: dict[str, Any] = {"share": percent(share), "steps": len(timed),
                             "data_ms": f"{data_ms:.1f}",
                             "step_ms": f"{_median([r['step_time'] for r in timed]) * 1000:.1f}"}
    location = None
    if loaders:
        loader = loaders[0]
        workers = loader.get("num_workers") or 0
        facts.update({"has_loader": True, "num_workers": workers, "pin_memory": loader.get("pin_memory"),
                      "persistent_workers": loader.get("persistent_workers"), "batch_size": loader.get("batch_size"),
                      "dataset": loader.get("dataset")})
        facts["few_workers"] = workers < 2
        facts["suggest_workers"] = max(2, min(8, (os.cpu_count() or 4) // 2))
        facts["restarts_workers"] = workers > 0 and not loader.get("persistent_workers")
        facts["cuda_unpinned"] = bool(run.meta.get("cuda")) and not loader.get("pin_memory")
        location = site_frame(loader.get("site"))
        if location is not None:
            facts["loader_place"] = f"{location.path}:{location.line}"
    return [Hit(timed[0]["step"], facts, location or site_frame(run.meta.get("step_site")),
                details={"data_share": share, "loader": loaders[0] if loaders else None})]


@detector("eval-mode")
def eval_mode(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    sensitive = set(params.get("mode_sensitive") or ())
    first = None
    count = 0
    for record in run.records:
        modules = [(n, c) for n, c in record.get("eval_examples") or () if not sensitive or c in sensitive]
        if modules:
            count += 1
            if first is None:
                first = (record, modules)
    if first is None:
        return []
    record, modules = first
    # Did the model go back to train mode later in the run (model.train() each epoch)? Then a lint
    # finding that says "nothing switches it back" does not describe this run.
    later = run.records[run.records.index(record) + 1:]
    back = next((r for r in later if not any(not sensitive or c in sensitive for _n, c in r.get("eval_examples") or ())),
                None)
    facts = {"step": record["step"], "count": len(modules), "steps_in_eval": count,
             "modules": ", ".join(f"{n} ({c})" for n, c in modules), "back_step": back["step"] if back else None}
    from ..lint.rules.trn703_eval_mode_leak import NEVER_SWITCHED_BACK

    related = tuple(f for f in lint() if back is None or NEVER_SWITCHED_BACK not in f.message)
    return [Hit(record["step"], facts, site_frame(run.meta.get("step_site")), related, linked=True)]


@detector("repeated-batch")
def repeated_batch(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    """The longest run of checks (hooks._batch_fingerprint) that saw the same model input, part of
    more data, at least `min_repeats` checks over at least `min_steps` steps."""
    if run.meta.get("repeat_batches"):
        return []  # `overfit` repeats the batches on purpose
    checked = [(r["step"], r["batch_fp"]) for r in run.records if isinstance(r.get("batch_fp"), list)]
    best: tuple[int, int] | None = None  # (first index, last index) in `checked`
    first = 0
    for i in range(1, len(checked) + 1):
        if i == len(checked) or checked[i][1] != checked[first][1]:
            if checked[first][1][1] and (best is None or i - 1 - first > best[1] - best[0]):
                best = (first, i - 1)
            first = i
    if best is None:
        return []
    repeats, (step, _), (last_step, _) = best[1] - best[0] + 1, checked[best[0]], checked[best[1]]
    if repeats < int(params.get("min_repeats", 10)) or last_step - step < int(params.get("min_steps", 20)):
        return []
    from_loader = checked[best[0]][1][1] == "loader"
    loaders = [loader for loader in run.meta.get("loaders") or () if loader.get("dataset_size")]
    facts: dict[str, Any] = {"step": step, "last_step": last_step, "span": last_step - step + 1,
                             "repeats": repeats, "from_loader": from_loader or None}
    location = site_frame(run.meta.get("step_site"))
    if from_loader and loaders:
        facts.update(dataset_size=loaders[0]["dataset_size"], batch_size=loaders[0].get("batch_size"))
        location = site_frame(loaders[0].get("site")) or location
    return [Hit(step, facts, location)]


# --- curves only ------------------------------------------------------------------------------------


@detector("plateau")
def plateau(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    hits = []
    for series in run.of_role("loss"):
        points = _finite_before_onset(series)
        if len(points) < int(params.get("min_steps", 20)):
            continue
        tail = points[-max(4, int(len(points) * float(params.get("tail", 0.4)))):]
        half = len(tail) // 2
        a, b = _median([v for _, v in tail[:half]]), _median([v for _, v in tail[half:]])
        level = _median([v for _, v in tail])
        first = _median([v for _, v in points[:3]])
        change = abs(b - a) / max(abs(level), 1e-12)
        # Flat, and flat well above where it started: converged runs are flat too, but low.
        if change < float(params.get("flat", 0.01)) and level > 0.5 * first:
            hits.append(Hit(tail[0][0], {"series": series.name.replace("_", " "), "step": tail[0][0],
                                         "level": num(level), "count": len(tail), "change": percent(change),
                                         "start": num(tail[0][1]), "end": num(tail[-1][1]),
                                         "last_step": tail[-1][0]}))
    return hits


@detector("train-val-gap")
def train_val_gap(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    val = run.first("val_loss")
    train = run.first("loss", val.origin) if val is not None else None
    if train is None or val is None:
        return []
    points = val.finite()
    if len(points) < int(params.get("min_points", 4)):
        return []
    best_step, best = min(points, key=lambda p: p[1])
    last_step, val_last = points[-1]
    if best_step == last_step or val_last < best * (1 + float(params.get("rise", 0.1))):
        return []
    train_points = train.finite()
    at_best = [v for s, v in train_points if s <= best_step]
    if not at_best or train_points[-1][1] >= at_best[-1]:
        return []
    return [Hit(best_step, {"step": best_step, "val_series": val.name, "train_series": train.name,
                            "best": num(best), "val_last": num(val_last), "last_step": last_step,
                            "train_at_best": num(at_best[-1]), "train_last": num(train_points[-1][1]),
                            "gap": num(val_last - train_points[-1][1])})]


@detector("lr-anomaly")
def lr_anomaly(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    series = run.first("lr")
    if series is None:
        return []
    points = series.finite()
    hits = []
    positive = [i for i, (_, v) in enumerate(points) if v > 0]
    if positive and positive[-1] < len(points) - 2 and positive[0] < positive[-1] + 1:
        step = points[positive[-1] + 1][0]
        hits.append(Hit(step, {"zero": True, "series": series.name, "step": step,
                               "before": num(points[positive[-1]][1]), "value": "0"}))
    # A drop by 10x in one step is what StepLR and MultiStepLR do by design; a rise by 10x is not
    # (an epoch scheduler stepped per batch restarts, a warm-up restarts), nor an lr that collapses
    # to a negligible share of its peak while the run goes on.
    jump = float(params.get("jump", 10.0))
    for (s0, v0), (s1, v1) in zip(points, points[1:]):
        if v0 > 0 and v1 > 0 and v1 / v0 >= jump:
            hits.append(Hit(s1, {"jump": True, "series": series.name, "step": s1, "before": num(v0),
                                 "value": num(v1), "factor": f"{v1 / v0:.0f}"}))
            break
    peak = max((v for _, v in points), default=0.0)
    collapse = float(params.get("collapse_ratio", 1e-4))
    low = [i for i, (_, v) in enumerate(points) if 0 < v < collapse * peak]
    if not hits and low and all(0 < v < collapse * peak for _, v in points[low[0]:]) \
            and len(points) - low[0] >= float(params.get("collapse_share", 0.1)) * len(points):
        step = points[low[0]][0]
        hits.append(Hit(step, {"collapsed": True, "series": series.name, "step": step, "before": num(peak),
                               "value": num(points[low[0]][1]), "last": num(points[-1][1])}))
    return hits


# --- overfit and repro verdicts ----------------------------------------------------------------------


def fit_summary(run: RunData, params: Mapping[str, Any]) -> dict[str, Any]:
    """Did the loss go to ~0 on the repeated batches? first/last loss and the step it got there."""
    loss = run.first("loss")
    points = _finite_before_onset(loss) if loss is not None else []
    if not points:
        return {"fits": False, "steps": len(run.records), "first": None, "last": None, "fit_step": None}
    first = points[0][1]
    last = _median([v for _, v in points[-int(params.get("tail", 5)):]])
    target = max(float(params.get("fit_ratio", 0.05)) * abs(first), float(params.get("fit_loss", 0.0)))
    if first > 0 and float(params.get("fit_loss", 0.0)) >= first:
        target = float(params.get("fit_ratio", 0.05)) * first  # a loss that starts tiny must still drop
    fit_step = next((s for s, v in points if v <= target), None)
    nonfinite = loss is not None and loss.first_nonfinite() is not None
    return {"fits": fit_step is not None and last <= target and not nonfinite, "first": first, "last": last,
            "fit_step": fit_step, "steps": len(run.records), "nonfinite": nonfinite}


@detector("does-not-fit")
def does_not_fit(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    summary = fit_summary(run, params)
    if summary["fits"] or not run.records:
        return []
    facts = learning_facts(run, params)
    facts["first"], facts["last"] = num(summary["first"]), num(summary["last"])
    facts["steps"] = summary["steps"]
    facts["batches"] = run.meta.get("repeat_batches") or 1
    suspects = []
    if facts.get("lr_zero"):
        suspects.append("the learning rate is 0")
    cut = site_frame((run.meta.get("detach_sites") or [None])[0]) if facts.get("never_grad") else None
    if cut is not None:
        facts["detach_site"] = f"{cut.path}:{cut.line}" + (f": {cut.code}" if cut.code else "")
        suspects.append(f"the `.detach()` at {cut.path}:{cut.line} cuts the graph ({facts['never']} never get a "
                        "gradient)")
    elif facts.get("never_grad"):
        suspects.append(f"a loss computed on detached outputs, or parameters not used in forward ({facts['never']} "
                        "never get a gradient)")
    if facts.get("frozen"):
        suspects.append("frozen parameters or a missing optimizer.step() (the weights do not move)")
    if summary.get("nonfinite"):
        suspects.append("a learning rate too high (the loss became non-finite)")
    elif summary["first"] is not None and summary["last"] > summary["first"]:
        facts["rising"] = True
        suspects.append("a learning rate too high (the loss rises)")
    findings = lint()
    for finding in findings[:3]:
        suspects.append(f"{finding.code} at {finding.path}:{finding.range.start.line + 1}: {finding.message}")
    if findings:
        facts["lint"] = "; ".join(f"{f.code} line {f.range.start.line + 1}" for f in findings[:5])
    if not suspects or not (facts.get("lr_zero") or facts.get("never_grad") or facts.get("frozen")):
        suspects.append("zero_grad/step misuse, a learning rate too low for the number of steps, or labels that do "
                        "not match the outputs")
    facts["top_suspect"] = suspects[0].split(" (")[0]
    facts["suspects"] = "; ".join(f"{i}) {s}" for i, s in enumerate(suspects, 1))
    return [Hit(run.records[-1]["step"], facts, cut or site_frame(run.meta.get("step_site")), tuple(findings),
                {"suspects": suspects, "fit": summary})]


def compare_runs(a: RunData, b: RunData, tolerance: float = 0.0) -> dict[str, Any]:
    """First step whose loss differs between two runs of the same command, and the parameter checksums."""
    loss_a = {r["step"]: to_float(r.get("loss")) for r in a.records}
    loss_b = {r["step"]: to_float(r.get("loss")) for r in b.records}
    out: dict[str, Any] = {"steps": min(len(loss_a), len(loss_b)), "step": None}
    for step in sorted(set(loss_a) & set(loss_b)):
        x, y = loss_a[step], loss_b[step]
        same = (x is None and y is None) or (x is not None and y is not None and (
            x == y or (math.isnan(x) and math.isnan(y)) or abs(x - y) <= tolerance))
        if not same:
            out.update(step=step, loss_a=x, loss_b=y,
                       delta=abs(x - y) if x is not None and y is not None else None)
            break
    checksum_a, checksum_b = a.meta.get("checksum"), b.meta.get("checksum")
    out["checksum_a"], out["checksum_b"] = checksum_a, checksum_b
    out["checksums_differ"] = checksum_a is not None and checksum_b is not None and checksum_a != checksum_b
    out["identical"] = out["step"] is None and not out["checksums_differ"] and len(loss_a) == len(loss_b)
    return out


def unseeded_generators(a: RunData, b: RunData) -> list[str]:
    """Generators whose state differs between the runs at the same step and changes during a run (drawn from)."""
    out = []
    for name in ("numpy", "python", "torch"):
        states_a = [r.get("rng", {}).get(name) for r in a.records]
        states_b = [r.get("rng", {}).get(name) for r in b.records]
        differs = any(x is not None and y is not None and x != y for x, y in zip(states_a, states_b))
        drawn = len({s for s in states_a if s is not None}) > 1
        if differs and drawn:
            out.append(name)
    return out


_GENERATOR_NAMES = {"numpy": "NumPy's global RNG (np.random.*)", "python": "Python's `random` module",
                    "torch": "torch's default generator"}


@detector("not-reproducible")
def not_reproducible(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    other = run.other
    if other is None:
        return []
    result = compare_runs(run, other, float(params.get("tolerance", 0.0)))
    if result["identical"]:
        return []
    facts: dict[str, Any] = {"steps": result["steps"], "checksum_a": num(result["checksum_a"]),
                             "checksum_b": num(result["checksum_b"])}
    if result["step"] is not None:
        facts.update(step=result["step"], loss_a=num(result["loss_a"]), loss_b=num(result["loss_b"]),
                     delta=num(result["delta"]))
    suspects = []
    unseeded = unseeded_generators(run, other)
    if unseeded:
        facts["unseeded"] = ", ".join(_GENERATOR_NAMES[n] for n in unseeded)
        suspects += [f"unseeded draws from {_GENERATOR_NAMES[n]}" for n in unseeded]
    warned = sorted({w.get("message", "") for w in other.meta.get("warnings") or []})
    if warned:
        facts["nondeterministic"] = "; ".join(warned[:3])
        suspects.append("nondeterministic operations: " + "; ".join(w[:120] for w in warned[:2]))
    if run.meta.get("cudnn_benchmark") or other.meta.get("cudnn_benchmark"):
        facts["cudnn_benchmark"] = True
        suspects.append("torch.backends.cudnn.benchmark = True")
    findings = lint()
    # A finding's text is shown once, with the finding (its `lint` line); here only where it is.
    for finding in findings[:3]:
        suspects.append(f"{finding.code} at {Path(finding.path).name}:{finding.range.start.line + 1}")
    if findings:
        facts["lint"] = ", ".join(f"{f.code} at line {f.range.start.line + 1}" for f in findings[:3])
    if not suspects:
        suspects.append("a source of randomness outside the global generators (data order, threads, the clock)")
    facts["top_suspect"] = suspects[0]
    facts["suspects"] = "; ".join(f"{i}) {s}" for i, s in enumerate(suspects, 1))
    return [Hit(result["step"], facts, site_frame(run.meta.get("backward_site")) or site_frame(run.meta.get("step_site")),
                tuple(findings), {"comparison": result, "suspects": suspects})]
