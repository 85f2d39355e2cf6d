"""Add what the probes saw to a Diagnosis: evidence no log contains.

A NaN names the tensors that hold NaN/inf (in frame order); a shape, device or
dtype mismatch names the actual tensors; an in-place error finds the tensor at
the reported version; an OOM shows the memory arithmetic (parameters +
gradients + optimizer state, and what is left for activations).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import asdict
from typing import Any

from ..diagnose.extract import human_size
from ..model import Diagnosis, Probes, TensorSummary

_MAX_LISTED = 6


def enrich(diagnosis: Diagnosis, probes: Probes | None) -> Diagnosis:
    if probes is None:
        return diagnosis
    message = diagnosis.exception.message if diagnosis.exception else ""
    evidence: list[str] = []
    notes: list[str] = []
    details = dict(diagnosis.details or {})
    kind = diagnosis.kind

    if probes.worker is not None:
        evidence.append(f"Failed in DataLoader worker process {probes.worker}.")
    if probes.rank is not None:
        evidence.append(f"Failed on rank {probes.rank}.")

    nonfinite = _nonfinite_tensors(probes)
    if kind == "nan-inf" or (nonfinite and kind in ("other",)):
        already = " ".join(diagnosis.evidence)
        note = _explain_nonfinite(nonfinite, _modules(probes), evidence, already)
        if note:
            notes.append(note)
    if kind == "shape-mismatch":
        notes.extend(_explain_shapes(message, probes, evidence))
    if kind == "device-mismatch":
        notes.extend(_explain_split(probes.tensors, "device", evidence))
    if kind == "dtype-mismatch":
        notes.extend(_explain_split(probes.tensors, "dtype", evidence))
    if kind == "inplace-modification":
        notes.extend(_explain_inplace(message, probes.tensors, evidence))
    if kind in ("dataloader-worker", "other") or probes.worker is not None:
        _describe_frame(probes, evidence)
    if kind in ("cuda-oom", "host-oom"):
        memory = _memory_arithmetic(kind, message, probes, evidence)
        if memory:
            details["memory"] = memory

    details["probes"] = probes_json(probes)
    if probes.worker is not None:
        details["worker"] = probes.worker
    root_cause = diagnosis.root_cause
    if notes:
        root_cause = (root_cause.rstrip() + " " if root_cause else "") + "Live: " + " ".join(notes)
    return dataclasses.replace(
        diagnosis,
        root_cause=root_cause,
        evidence=tuple(diagnosis.evidence) + tuple(e for e in evidence if e not in diagnosis.evidence),
        rank=diagnosis.rank if probes.rank is None else probes.rank,
        details=details,
    )


def probes_json(probes: Probes) -> dict[str, Any]:
    """What the probes read, JSON-ready (the `traceback` text is left out: it is the input)."""
    out: dict[str, Any] = {
        "frame": None if probes.frame is None else probes.frame.to_json(),
        "rank": probes.rank,
        "worker": probes.worker,
        "tensors": [_tensor_json(t) for t in probes.tensors],
    }
    for result in probes.results:
        if result.name in ("tensors", "traceback"):
            if not result.ok:
                out.setdefault("errors", {})[result.name] = result.error
            continue
        if result.ok:
            out[result.name] = result.value
        else:
            out.setdefault("errors", {})[result.name] = result.error
    return out


def _tensor_json(t: TensorSummary) -> dict[str, Any]:
    data = asdict(t)
    data["shape"] = list(t.shape)
    return data


def _modules(probes: Probes) -> list[dict[str, Any]]:
    result = probes.get("modules")
    return [m for m in (result.value if result and result.ok and isinstance(result.value, list) else []) if isinstance(m, dict)]


def _optimizers(probes: Probes) -> list[dict[str, Any]]:
    result = probes.get("optimizers")
    return [o for o in (result.value if result and result.ok and isinstance(result.value, list) else []) if isinstance(o, dict)]


def _env(probes: Probes) -> dict[str, Any]:
    result = probes.get("env")
    return result.value if result and result.ok and isinstance(result.value, dict) else {}


def _shape(t: TensorSummary) -> str:
    return "(" + ", ".join(str(d) for d in t.shape) + ("," if len(t.shape) == 1 else "") + ")"


def _describe(t: TensorSummary) -> str:
    return f"`{t.name}` {_shape(t)} {t.dtype} on {t.device}"


def _describe_frame(probes: Probes, evidence: list[str]) -> None:
    """The failing frame's simple values and tensors (e.g. the sample index in a worker)."""
    result = probes.get("scalars")
    values = [v for v in (result.value if result and result.ok and isinstance(result.value, list) else [])
              if isinstance(v, dict)]
    if values:
        shown = ", ".join(f"{v.get('name')} = {v.get('value')!r}" for v in values[:8])
        evidence.append(f"Values in the failing frame: {shown}.")
    tensors = [t for t in probes.tensors if t.scope != "module"]
    if tensors:
        evidence.append("Tensors in the failing frame: " + ", ".join(_describe(t) for t in tensors[:4]) + ".")


# --- NaN / inf ---------------------------------------------------------------


def _nonfinite_tensors(probes: Probes) -> list[TensorSummary]:
    return [t for t in probes.tensors if (t.nan_count or 0) > 0 or (t.inf_count or 0) > 0]


def _explain_nonfinite(tensors: list[TensorSummary], modules: list[dict[str, Any]], evidence: list[str],
                       already: str) -> str:
    for t in tensors[:_MAX_LISTED]:
        if f"`{t.name}`" in already:
            continue  # the traceback engine listed it from the same probe
        counts = []
        if t.nan_count:
            counts.append(f"{t.nan_count} NaN")
        if t.inf_count:
            counts.append(f"{t.inf_count} inf")
        evidence.append(f"Tensor {_describe(t)} holds {' and '.join(counts)} (of {_numel(t)} values).")
    bad_grads = [(m.get("name"), g) for m in modules for g in m.get("nonfinite_grads") or ()]
    for module, param in bad_grads[:_MAX_LISTED]:
        evidence.append(f"Gradient of `{module}.{param}` holds NaN/inf.")
    if not tensors:
        return "no tensor in the failing frame holds NaN/inf, so the bad values arise inside the failing operation."
    first = tensors[0]
    others = ", ".join(f"`{t.name}`" for t in tensors[1:_MAX_LISTED])
    return f"`{first.name}` is the first tensor in the frame holding NaN/inf" + (f" (also {others})." if others else ".")


def _numel(t: TensorSummary) -> int:
    n = 1
    for d in t.shape:
        n *= d
    return n


# --- shapes, devices, dtypes -----------------------------------------------------

_MATMUL = re.compile(r"\((\d+)x(\d+) and (\d+)x(\d+)\)")
_SIZES = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)")
_BATCH = re.compile(r"batch_size \((\d+)\) to match target batch_size \((\d+)\)")
_BRACKETS = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def _explain_shapes(message: str, probes: Probes, evidence: list[str]) -> list[str]:
    shapes: set[tuple[int, ...]] = set()
    numbers: set[int] = set()
    if m := _MATMUL.search(message):
        a, b, c, d = (int(x) for x in m.groups())
        shapes |= {(a, b), (c, d), (d, c)}
        numbers |= {b, c}
    for pattern in (_SIZES, _BATCH):
        if m := pattern.search(message):
            numbers |= {int(x) for x in m.groups()}
    for m in _BRACKETS.finditer(message):
        shapes.add(tuple(int(x) for x in m.group(1).split(",")))
    tensors = list(probes.tensors)
    involved = [t for t in tensors if t.shape in shapes or (shapes == set() and numbers & set(t.shape))]
    if not involved and numbers:
        involved = [t for t in tensors if numbers & set(t.shape)]
    for t in (involved or tensors)[:_MAX_LISTED]:
        evidence.append(f"Tensor {_describe(t)}.")
    layers = []
    for module in _modules(probes):
        for layer in module.get("layers") or ():
            extra = str(layer.get("extra", ""))
            values = {int(x) for x in re.findall(r"=(\d+)", extra)}
            if numbers & values:
                layers.append(f"`{module.get('name')}.{layer.get('name')}` {layer.get('type')}({extra})")
    for layer in layers[:_MAX_LISTED]:
        evidence.append(f"Layer {layer}.")
    notes = []
    if involved:
        notes.append("the mismatched tensors are " + ", ".join(_describe(t) for t in involved[:_MAX_LISTED]) + ".")
    if layers:
        notes.append("layers with a matching size: " + ", ".join(layers[:3]) + ".")
    return notes


def _explain_split(tensors: tuple[TensorSummary, ...], attribute: str, evidence: list[str]) -> list[str]:
    groups: dict[str, list[TensorSummary]] = {}
    for t in tensors:
        groups.setdefault(getattr(t, attribute), []).append(t)
    for value, members in groups.items():
        names = ", ".join(f"`{t.name}`" for t in members[:_MAX_LISTED])
        evidence.append(f"On {attribute} {value}: {names}.")
    if len(groups) < 2:
        return []
    parts = [f"{', '.join(f'`{t.name}`' for t in members[:3])} on {value}" for value, members in groups.items()]
    return [f"the frame mixes {attribute}s: " + "; ".join(parts) + "."]


_INPLACE = re.compile(r"\[torch\.(\w+) \[([\d, ]*)\]\].*?is at version (\d+); expected version (\d+)", re.S)


def _explain_inplace(message: str, tensors: tuple[TensorSummary, ...], evidence: list[str]) -> list[str]:
    m = _INPLACE.search(message)
    if not m:
        return []
    shape = tuple(int(x) for x in m.group(2).split(",") if x.strip())
    version, expected = int(m.group(3)), int(m.group(4))
    suspects = [t for t in tensors if t.shape == shape and t.version == version]
    if not suspects:
        suspects = [t for t in tensors if t.shape == shape and (t.version or 0) > expected]
    for t in suspects[:_MAX_LISTED]:
        evidence.append(f"Tensor {_describe(t)} is at version {t.version} (modified in place).")
    if not suspects:
        return []
    names = ", ".join(f"`{t.name}`" for t in suspects[:3])
    return [f"modified in place after autograd saved it: {names} (version {version}, expected {expected})."]


# --- memory ---------------------------------------------------------------------

_HOST_REQUEST = re.compile(r"you tried to allocate (\d+) bytes")


def _memory_arithmetic(kind: str, message: str, probes: Probes, evidence: list[str]) -> dict[str, Any]:
    modules = [m for m in _modules(probes) if not m.get("contained_in") and "error" not in m]
    optimizers = [o for o in _optimizers(probes) if "error" not in o]
    env = _env(probes)
    memory: dict[str, Any] = {
        "parameters": sum(int(m.get("param_bytes", 0)) for m in modules),
        "gradients": sum(int(m.get("grad_bytes", 0)) for m in modules),
        "buffers": sum(int(m.get("buffer_bytes", 0)) for m in modules),
        "optimizer_state": sum(int(o.get("state_bytes", 0)) for o in optimizers),
    }
    model_total = sum(memory.values())
    memory["model_total"] = model_total
    if modules or optimizers:
        evidence.append(
            "Model memory: parameters {} + gradients {} + buffers {} + optimizer state {} = {}.".format(
                human_size(memory["parameters"]), human_size(memory["gradients"]), human_size(memory["buffers"]),
                human_size(memory["optimizer_state"]), human_size(model_total),
            )
        )
    if kind == "cuda-oom":
        cuda = env.get("cuda_memory") or {}
        if cuda:
            memory.update({f"cuda_{k}": v for k, v in cuda.items()})
            allocated = int(cuda.get("allocated", 0))
            reserved = int(cuda.get("reserved", 0))
            left = allocated - model_total
            memory["activations_and_other"] = max(left, 0)
            line = (f"CUDA memory: {human_size(allocated)} allocated, {human_size(reserved)} reserved "
                    f"({human_size(max(reserved - allocated, 0))} cached but unused)")
            if "total" in cuda:
                line += f", {human_size(int(cuda.get('free', 0)))} free of {human_size(int(cuda['total']))}"
            evidence.append(line + ".")
            if modules or optimizers:
                evidence.append(f"Activations and other tensors: about {human_size(max(left, 0))} of the allocated memory.")
        summary = probes.get("cuda_memory_summary")
        if summary and summary.ok and summary.value:
            memory["summary"] = summary.value
    else:
        host = env.get("host_memory") or {}
        process = env.get("process_memory") or {}
        request = _HOST_REQUEST.search(message)
        if request:
            memory["requested"] = int(request.group(1))
        if host:
            memory["host_available"] = host.get("MemAvailable")
            memory["host_total"] = host.get("MemTotal")
        if process:
            memory["process_rss"] = process.get("VmRSS")
        parts = []
        if request:
            parts.append(f"requested {human_size(int(request.group(1)))}")
        if host.get("MemAvailable") is not None:
            parts.append(f"{human_size(int(host['MemAvailable']))} available of {human_size(int(host.get('MemTotal') or 0))}")
        if process.get("VmRSS") is not None:
            parts.append(f"this process uses {human_size(int(process['VmRSS']))}")
        if parts:
            evidence.append("Host memory: " + ", ".join(parts) + ".")
    return memory
