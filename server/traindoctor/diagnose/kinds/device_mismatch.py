"""Hooks of the `device-mismatch` kind (rules/signatures/*.yaml with kind: device-mismatch).

`derive`: which side of a device mismatch is on the CPU.
`enrich_live`: the frame's tensors grouped by device.
"""

from __future__ import annotations

from typing import Any

from . import Live

# Arguments that hold layer parameters (F.linear/addmm: mat2 = weight.t(), bias; conv: weight).
_MODEL_SIDE = {"mat2", "weight", "bias", "vec"}
_BATCH_SIDE = {"mat1", "input", "index", "indices", "target", "other", "tensors", "mat"}


def derive(facts: dict[str, Any], text: str) -> dict[str, Any]:
    """Which side of a device mismatch is on the CPU: the model (weights) or the batch."""
    method = facts.get("method")
    out: dict[str, Any] = {"method_clause": f" (in {method})" if method else ""}
    argument = str(facts.get("argument") or "").lower()
    arg_device, other_device = str(facts.get("device_a") or "").lower(), str(facts.get("device_b") or "").lower()
    model_on_cpu = batch_on_cpu = False
    gpu = ""
    if facts.get("param_device") and facts.get("input_device"):
        model_on_cpu = str(facts["param_device"]).lower().startswith("cpu")
        batch_on_cpu = not model_on_cpu
        gpu = str(facts["input_device"] if model_on_cpu else facts["param_device"])
    elif facts.get("input_type") or facts.get("weight_type"):
        model_on_cpu = "cuda" in str(facts.get("input_type") or "").lower()
        batch_on_cpu = not model_on_cpu
        gpu = "cuda"
    elif arg_device.startswith("cpu") and other_device:
        gpu = other_device
        model_on_cpu, batch_on_cpu = argument in _MODEL_SIDE, argument not in _MODEL_SIDE
    elif other_device.startswith("cpu") and arg_device:
        gpu = arg_device
        model_on_cpu, batch_on_cpu = argument in _BATCH_SIDE, argument in _MODEL_SIDE
    if model_on_cpu or batch_on_cpu:
        out["model_on_cpu"], out["batch_on_cpu"] = model_on_cpu, batch_on_cpu
        out["gpu_device"] = "cuda" if gpu in ("gpu", "cuda", "") else gpu
        out["cpu_tensor"] = facts.get("argument") if arg_device.startswith("cpu") and argument else "the input"
    return out


def enrich_live(live: Live) -> None:
    from . import split_by

    split_by(live, "device")
