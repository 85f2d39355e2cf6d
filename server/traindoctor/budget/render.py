"""The budget report as text for people (JSON is the report dict itself)."""

from __future__ import annotations

from typing import Any

GIB = 1 << 30
MIB = 1 << 20


def size(value: float | None) -> str:
    if value is None:
        return "?"
    sign = "-" if value < 0 else ""
    value = abs(value)
    if value >= GIB:
        return f"{sign}{value / GIB:.2f} GiB"
    if value >= MIB:
        return f"{sign}{value / MIB:.1f} MiB"
    return f"{sign}{value / 1024:.1f} KiB"


def _flop(value: int) -> str:
    for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
        if value >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{value} FLOP"


def _seconds(value: float) -> str:
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.0f} us"


def render_text(report: dict[str, Any]) -> str:
    gpu = report["gpu"]
    lines = []
    verdict = "fits" if report["fits"] else "does NOT fit"
    batch = f" at batch {report['batch_size']}" if report.get("batch_size") else ""
    world = f" per rank of {report['world_size']} ({report['distributed'] or 'no DDP/FSDP wrapper seen'})" \
        if report.get("world_size", 1) > 1 else ""
    lines.append(f"One training step{batch}{world}: peak {size(report['peak_bytes'])} on {gpu['name']} "
                 f"({size(report['gpu_memory_bytes'])}, {size(report['reserve_bytes'])} kept for the CUDA context "
                 f"and the allocator): {verdict}, headroom {size(report['headroom_bytes'])}.")
    where = f" in {report['peak_module']}" if report.get("peak_module") else ""
    lines.append(f"The peak is in the {report['peak_phase']} phase{where}.")
    lines.append("")
    lines.append("Memory at the peak, by category:")
    for name, value in report["by_category"].items():
        share = value / report["peak_bytes"] if report["peak_bytes"] else 0
        lines.append(f"  {name.replace('_', ' '):<17} {size(value):>12}  {share:6.1%}")
    lines.append(f"  (activations saved for backward when it starts: {size(report['activations_at_backward'])})")
    if report["by_module"]:
        lines.append("")
        lines.append("Largest modules (parameters + activations they keep for backward):")
        for module in report["by_module"]:
            lines.append(f"  {module['name']:<40} {module['class']:<20} params {size(module['parameters']):>11}  "
                         f"activations {size(module['activations']):>11}")
    lines.append("")
    time = report.get("step_time_s")
    lines.append(f"Compute: {_flop(report['flops'])} per step; at least {_seconds(time)} per step on {gpu['name']}"
                 if time is not None else f"Compute: {_flop(report['flops'])} per step.")
    lines.append(f"  ({report['step_time_assumes']})")
    line = report["batch_line"]
    lines.append("")
    if report.get("max_batch") is not None:
        points = ", ".join(f"{b}: {size(p)}" for b, p in line["points"])
        lines.append(f"Largest batch that fits: {report['max_batch']} (measured peaks at batch {points}; "
                     f"the {line['binding_phase']} peak grows {size(line['per_sample'])} per sample).")
        if line.get("note"):
            lines.append(f"  {line['note']}")
        elif line.get("linear"):
            lines.append(f"  Each phase's peak is linear in the batch (the third point is at most "
                         f"{line['deviation']:.1%} off its line).")
    else:
        lines.append(f"Largest batch: unknown ({line.get('reason', 'not measured')}).")
    if report["levers"]:
        lines.append("")
        lines.append("Levers (each re-estimated):")
        for lever in report["levers"]:
            if lever.get("skipped"):
                lines.append(f"  {lever['title']}: not applied ({lever['skipped']})")
                continue
            fits = "fits" if lever["fits"] else "does not fit"
            lines.append(f"  {lever['title']}: peak {size(lever['peak_bytes'])} "
                         f"(saves {size(lever['saves_bytes'])}, {fits}); {lever['how']}")
            if lever.get("checkpointed"):
                names = lever["checkpointed"]
                lines.append(f"    checkpointed: {', '.join(names[:4])}{' ...' if len(names) > 4 else ''}")
    lines.append("")
    if report["unaccounted"]:
        lines.append("Not counted (the fake step could not follow these):")
        for note in report["unaccounted"]:
            times = f" ({note['count']}x)" if note.get("count", 1) > 1 else ""
            lines.append(f"  - {note['kind']}: {note['what']}{times}: {note['detail']}")
    else:
        lines.append("The fake step followed everything the script did.")
    return "\n".join(lines) + "\n"
