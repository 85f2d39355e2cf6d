"""What the collector measured (budget.json) -> the report: fits, largest batch, levers, time.

Every number here comes from a measured fake step, except two levers that are arithmetic on measured
categories (an 8-bit optimizer, gradient accumulation); their "how" says so.
"""

from __future__ import annotations

import math
from typing import Any

from .gpus import Gpu

CATEGORIES = ("parameters", "buffers", "gradients", "optimizer_state", "activations", "temporaries")
LEVER_TITLES = {
    "bf16_autocast": "bf16 autocast (torch.autocast(\"cuda\", dtype=torch.bfloat16) around forward and loss)",
    "checkpoint": "activation checkpointing of the largest repeated blocks (torch.utils.checkpoint, "
                  "use_reentrant=False)",
    "foreach_off": "optimizer without foreach (foreach=False: no multi-tensor temporaries in the step)",
    "set_to_none": "optimizer.zero_grad(set_to_none=True) (gradients freed between steps)",
    "optimizer_8bit": "8-bit optimizer state (bitsandbytes AdamW8bit)",
    "grad_accumulation_2": "gradient accumulation over 2 micro-batches of half the batch",
}


class BudgetError(RuntimeError):
    """Nothing was measured (one line for the user)."""


def build_report(raw: dict[str, Any], gpu: Gpu, reserve: int, tolerance: float) -> dict[str, Any]:
    results = {r["name"]: r for r in raw.get("results", [])}
    base = results.get("base")
    if base is None or base.get("skipped"):
        reason = raw.get("error") or (base or {}).get("skipped") or \
            ("the script made no optimizer step" if not raw.get("steps") else "it stopped after the warm-up step")
        raise BudgetError(f"no training step was measured: {reason}")
    peak = dict(base["peak"])
    end = base["end"]
    if base["peak_phase"] == "optimizer":
        # The optimizer step's own scratch tensors are tracked as optimizer state while it runs.
        scratch = max(0, peak["optimizer_state"] - end["optimizer_state"])
        peak["optimizer_state"] -= scratch
        peak["temporaries"] += scratch
    capacity = gpu.memory_bytes - reserve
    peak_bytes = int(base["peak_bytes"])
    line = _batch_line(raw["results"], base, tolerance)
    report: dict[str, Any] = {
        "command": "budget",
        "peak_bytes": peak_bytes,
        "by_category": {c: int(peak.get(c, 0)) for c in CATEGORIES},
        "peak_phase": base["peak_phase"],
        "peak_module": base.get("peak_module") or None,
        "phase_peaks": base.get("phase_peaks", {}),
        "steady_state": {c: int(end.get(c, 0)) for c in CATEGORIES},
        "activations_at_backward": int((base.get("at_backward") or {}).get("activations", 0)),
        "by_module": _by_module(base),
        "flops": int(base.get("flops", 0)),
        "step_time_s": _step_time(base),
        "step_time_assumes": (f"a roofline over the step's {base.get('timeline_ops', 0)} ops on {gpu.name}: each op "
                              f"takes the longer of its FLOPs at the peak rate for its dtype "
                              f"({_rates(gpu)}) and its bytes at {gpu.bandwidth_gbs:g} GB/s; a lower bound "
                              f"(real kernels reach 30-70% of peak; no launch overhead, no data loading)"),
        "gpu": gpu.to_json(),
        "gpu_memory_bytes": gpu.memory_bytes,
        "reserve_bytes": reserve,
        "fits": peak_bytes <= capacity,
        "headroom_bytes": capacity - peak_bytes,
        "batch_size": base.get("batch_size"),
        "max_batch": None,
        "batch_line": line,
        "levers": _levers(raw["results"], base, peak, line, capacity),
        "unaccounted": raw.get("unaccounted", []),
        "parameter_count": base.get("parameter_count"),
        "parameter_dtypes": base.get("parameter_dtypes"),
        "optimizers": base.get("optimizers"),
        "world_size": raw.get("world_size", 1),
        "distributed": raw.get("distributed"),
        "timeline": {"phases": ["forward", "backward", "optimizer"], "categories": list(CATEGORIES),
                     "ops": base.get("timeline_ops", 0), "points": base.get("timeline", [])},
        "measure_seconds": raw.get("seconds"),
    }
    report["max_batch"] = largest_batch(line, capacity)
    if raw.get("error"):
        report["script_error"] = raw["error"]
    return report


def _rates(gpu: Gpu) -> str:
    return ", ".join(f"{k} {v:g} TFLOP/s" for k, v in gpu.tflops.items())


def _step_time(base: dict[str, Any]) -> float | None:
    roofline = base.get("roofline") or {}
    return round(roofline["seconds"], 6) if "seconds" in roofline else None


def _by_module(base: dict[str, Any], top: int = 10) -> list[dict[str, Any]]:
    flops = base.get("flops_by_module", {})
    modules = [m for m in base.get("modules", []) if "." in m["name"]]  # the root is the whole model
    modules.sort(key=lambda m: -(m["activations"] + m["parameters"]))
    out = []
    for module in modules[:top]:
        out.append({"name": module["name"], "class": module.get("class", ""), "parameters": module["parameters"],
                    "activations": module["activations"], "total_bytes": module["parameters"] + module["activations"],
                    "flops": int(flops.get(module["name"], 0))})
    return out


def _batch_line(results: list[dict[str, Any]], base: dict[str, Any], tolerance: float) -> dict[str, Any]:
    """Per phase (forward, backward, optimizer), peak(batch) = fixed + per_sample * batch from the base
    and the scaled steps, the third point checking it; the step's peak is the largest of the phase lines
    (the phase that peaks can change with the batch, so the total alone is not a line)."""
    batch = base.get("batch_size")
    if not batch:
        return {"reason": "the batch does not come from a DataLoader, so the step was not measured at another "
                          "batch size"}
    steps = sorted({r["batch_scale"]: r for r in results if not r.get("skipped") and not r.get("lever")
                    and r.get("batch_scale")}.items())
    points = [(batch * scale, int(r["peak_bytes"])) for scale, r in steps]
    if len(points) < 2:
        skipped = [r.get("skipped") for r in results if r.get("name", "").startswith("batch") and r.get("skipped")]
        return {"reason": "only one batch size was measured" + (f" ({skipped[0]})" if skipped else ""),
                "points": points}
    phases: dict[str, dict[str, Any]] = {}
    for phase in ("forward", "backward", "optimizer"):
        samples = [(batch * scale, int(r.get("phase_peaks", {}).get(phase, 0))) for scale, r in steps]
        if any(peak == 0 for _, peak in samples):
            continue
        phases[phase] = _fit(samples, tolerance)
    line: dict[str, Any] = {"points": points, "phases": phases,
                            "linear": all(p["linear"] is not False for p in phases.values())}
    checked = [p["deviation"] for p in phases.values() if "deviation" in p]
    if checked:
        line["deviation"] = max(checked)
    bad = [name for name, p in phases.items() if p["linear"] is False]
    if bad:
        line["note"] = (f"the {', '.join(bad)} peak is not linear in the batch (the third point is "
                        f"{max(phases[b]['deviation'] for b in bad):.1%} off the line through the first two): "
                        f"the largest batch is extrapolated from the two largest measured batches and is unsure")
    growing = {name: p for name, p in phases.items() if p["per_sample"] > 0}
    if not growing:
        line["reason"] = "the peak did not grow with the batch"
        return line
    # The phase that grows fastest binds at large batches; report its line (the others are in `phases`).
    binding = max(growing, key=lambda name: growing[name]["per_sample"])
    line["binding_phase"] = binding
    line["per_sample"] = growing[binding]["per_sample"]
    line["fixed"] = growing[binding]["fixed"]
    return line


def _fit(samples: list[tuple[int, int]], tolerance: float) -> dict[str, Any]:
    (b1, p1), (b2, p2) = samples[0], samples[1]
    per_sample = (p2 - p1) / (b2 - b1)
    fit: dict[str, Any] = {"per_sample": per_sample, "fixed": p1 - per_sample * b1, "linear": None}
    if len(samples) >= 3:
        b3, p3 = samples[2]
        deviation = abs(p3 - (fit["fixed"] + per_sample * b3)) / p3
        fit["deviation"] = round(deviation, 4)
        fit["linear"] = deviation <= tolerance
        if not fit["linear"]:
            (b1, p1), (b2, p2) = samples[-2], samples[-1]
            fit["per_sample"] = (p2 - p1) / (b2 - b1)
            fit["fixed"] = p1 - fit["per_sample"] * b1
    return fit


def largest_batch(line: dict[str, Any], capacity: int) -> int | None:
    """The largest batch at which every phase's line stays within `capacity`."""
    phases = line.get("phases") or {}
    if not line.get("per_sample") or not phases:
        return None
    limits = []
    for fit in phases.values():
        if fit["per_sample"] > 0:
            limits.append(math.floor((capacity - fit["fixed"]) / fit["per_sample"]))
        elif fit["fixed"] > capacity:
            limits.append(0)
    return max(0, min(limits)) if limits else None


def _levers(results: list[dict[str, Any]], base: dict[str, Any], peak: dict[str, int], line: dict[str, Any],
            capacity: int) -> list[dict[str, Any]]:
    base_peak = int(base["peak_bytes"])
    levers = []

    def add(name: str, peak_bytes: int | None, how: str, measured: bool, skipped: str | None = None,
            extra: dict[str, Any] | None = None) -> None:
        entry: dict[str, Any] = {"name": name, "title": LEVER_TITLES.get(name, name), "peak_bytes": peak_bytes,
                                 "measured": measured, "how": how}
        if peak_bytes is not None:
            entry["saves_bytes"] = base_peak - peak_bytes
            entry["fits"] = peak_bytes <= capacity
        if skipped:
            entry["skipped"] = skipped
        entry.update(extra or {})
        levers.append(entry)

    for result in results:
        lever = result.get("lever")
        if not lever:
            continue
        if result.get("skipped"):
            add(lever, None, "not measured", False, result["skipped"])
            continue
        extra = {"checkpointed": result["checkpointed"]} if result.get("checkpointed") else None
        add(lever, int(result["peak_bytes"]), "measured: one more fake step with the lever on", True, extra=extra)
    state = int(base["end"].get("optimizer_state", 0))
    adam_like = any(o["class"].lower().startswith(("adam", "nadam", "radam")) for o in base.get("optimizers") or [])
    if state and adam_like:
        add("optimizer_8bit", base_peak - (state * 3) // 4,
            "arithmetic on the measured optimizer state: exp_avg and exp_avg_sq kept in 1 byte instead of 4 "
            "(block-wise scales are ~0.1% more); needs bitsandbytes on the GPU", False)
    if line.get("per_sample") and base.get("batch_size", 0) >= 2:
        half = base["batch_size"] / 2
        grads = int(base["end"].get("gradients", 0))
        at_half = max(fit["fixed"] + fit["per_sample"] * half for fit in line["phases"].values())
        estimate = at_half + max(0, grads - peak.get("gradients", 0))
        add("grad_accumulation_2", int(estimate),
            "from the measured batch line at half the batch, plus the gradients that stay alive between "
            "micro-batches; the effective batch is unchanged", False)
    return levers
