"""Hooks of the `cuda-oom` kind (rules/signatures/*.yaml with kind: cuda-oom).

`derive`: sizes in bytes, fragmentation, memory used by other processes.
`refine`: the sizes go to details["memory_bytes"]; an evaluation function on the stack without no_grad;
  for a script in the workspace, the `traindoctor budget` command that estimates what fits (details["budget"]).
`enrich_live`: the memory arithmetic (model, optimizer state, activations) from the probes.
"""

from __future__ import annotations

from typing import Any

from ..extract import parse_size, human_size
from . import Failure, Live


def derive(facts: dict[str, Any], text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    sizes = {k: parse_size(facts.get(k)) for k in
             ("requested", "total", "free", "allocated", "reserved_unallocated", "reserved", "cached", "in_use")}
    if sizes["reserved_unallocated"] is None:
        if sizes["reserved"] is not None and sizes["allocated"] is not None:
            sizes["reserved_unallocated"] = max(0, sizes["reserved"] - sizes["allocated"])
        elif sizes["cached"] is not None and sizes["allocated"] is not None:
            # "cached" meant all reserved memory in some releases and only the
            # unused part in others; it can only include allocated memory if larger.
            cached, allocated = sizes["cached"], sizes["allocated"]
            sizes["reserved_unallocated"] = cached - allocated if cached >= allocated else cached
        if sizes["reserved_unallocated"] is not None:
            out["reserved_unallocated"] = human_size(sizes["reserved_unallocated"])
    requested, total, free = sizes["requested"], sizes["total"], sizes["free"]
    unallocated = sizes["reserved_unallocated"]
    if unallocated is not None:
        # Fragmentation is the likely cause when the cache holds enough for the
        # request and is a real share of what PyTorch reserved; when it would fit
        # the request but is a sliver of the reservation, live tensors are the cause.
        reserved = unallocated + (sizes["allocated"] or 0)
        fits = requested is None or unallocated >= requested
        large = reserved > 0 and unallocated >= 0.1 * reserved
        out["fragmentation"] = fits and large
        out["fragmentation_minor"] = fits and not large and requested is not None
    if total and free is not None and sizes["in_use"] is not None:
        other = total - free - sizes["in_use"]
        if other > 0:
            out["other_usage"] = human_size(other)
            out["other_usage_large"] = other >= 0.1 * total
    out["no_sizes"] = requested is None and total is None
    out["alloc_conf_name"] = facts.get("alloc_conf_var") or "PYTORCH_CUDA_ALLOC_CONF"
    out["sizes_bytes"] = {k: v for k, v in sizes.items() if v is not None}
    return out


def refine(failure: Failure) -> None:
    if "sizes_bytes" in failure.facts:
        failure.details["memory_bytes"] = failure.facts.pop("sizes_bytes")
    from .. import source

    _offer_budget(failure)
    function = source.eval_function(failure.frames, source.user_sources(failure.frames, failure.base_dir))
    if function:
        failure.facts["eval_function"] = function
        failure.evidence.append(f"the OOM happens in {function}(), an evaluation step that keeps autograd graphs "
                                "(no torch.no_grad())")


def _offer_budget(failure: Failure) -> None:
    """When the failing program is a script in the workspace: the `traindoctor budget` command that
    estimates, before the next run, the largest batch that fits this GPU and the cheapest lever.
    It runs the user's code, so it is only offered (details["budget"]), never started here."""
    import shlex

    from ..correlate import resolve

    entry = next((frame for frame in failure.frames if frame.is_user), None)
    script = resolve(entry.path, failure.base_dir) if entry is not None else None
    if script is None or entry.function != "<module>":
        return
    try:
        shown = script.resolve().relative_to(failure.base_dir.resolve())
    except ValueError:
        return  # not in the workspace
    total = failure.details.get("memory_bytes", {}).get("total") or failure.facts.get("sizes_bytes", {}).get("total")
    memory = f"{total / (1 << 30):.2f}GiB" if total else None
    command = ["traindoctor", "budget", *(["--gpu-memory", memory] if memory else []), "--", "python", str(shown)]
    failure.facts["budget_command"] = shlex.join(command)
    failure.details["budget"] = {"script": str(script), "gpu_memory": memory, "command": command}


def enrich_live(live: Live) -> None:
    from ..probe_values import probes_value
    from . import model_memory

    memory, model_known = model_memory(live)
    cuda = (probes_value(live.probes, "env", dict) or {}).get("cuda_memory") or {}
    if cuda:
        memory.update({f"cuda_{k}": v for k, v in cuda.items()})
        allocated = int(cuda.get("allocated", 0))
        reserved = int(cuda.get("reserved", 0))
        left = allocated - memory["model_total"]
        memory["activations_and_other"] = max(left, 0)
        line = (f"CUDA memory: {human_size(allocated)} allocated, {human_size(reserved)} reserved "
                f"({human_size(max(reserved - allocated, 0))} cached but unused)")
        if "total" in cuda:
            line += f", {human_size(int(cuda.get('free', 0)))} free of {human_size(int(cuda['total']))}"
        live.evidence.append(line + ".")
        if model_known:
            live.evidence.append(f"Activations and other tensors: about {human_size(max(left, 0))} "
                                 "of the allocated memory.")
    summary = live.probes.get("cuda_memory_summary")
    if summary and summary.ok and summary.value:
        memory["summary"] = summary.value
    live.details["memory"] = memory
