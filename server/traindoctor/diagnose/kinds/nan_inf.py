"""Hooks of the `nan-inf` kind (rules/signatures/*.yaml with kind: nan-inf).

`refine`: the forward line anomaly mode names becomes the location; logits masked with -inf.
`enrich_live`: the gradients holding NaN/inf, and which tensor is the first bad one.
`recognise_live`: tensors holding NaN/inf make an unrecognised failure (a bare assert) a NaN.
"""

from __future__ import annotations

from ...model import Probes
from . import Failure, Live


def refine(failure: Failure) -> None:
    from .. import source
    from ..select import deepest_user_frame

    forward_chains = failure.forward_chains
    for chain in forward_chains:
        frame = deepest_user_frame(chain.blocks[0].frames)
        if frame is not None:
            failure.facts["forward_site"] = f"{frame.path}:{frame.line}"
            failure.facts["forward_code"] = frame.code or ""
            failure.evidence.append(f"forward call that produced it: {frame.path}:{frame.line}"
                                    + (f": {frame.code}" if frame.code else ""))
            if failure.location is not None:
                failure.details["raise_location"] = {"path": failure.location.path, "line": failure.location.line}
            failure.location = frame  # the line to change is the forward op, not loss.backward()
    forward = [f for c in forward_chains for f in c.frames]
    sources = source.user_sources(tuple(failure.frames) + tuple(forward), failure.base_dir)
    if source.masked_inf(sources, str(failure.facts.get("forward_code") or "")):
        failure.facts["masked_inf"] = True
        failure.evidence.append("the logits are masked with -inf: exp(-inf) = 0 and 0 * log(0) = 0 * -inf = NaN")


def recognise_live(probes: Probes) -> str | None:
    from ..probe_values import nonfinite_tensors

    return "nan-value-error" if nonfinite_tensors(probes) else None


def enrich_live(live: Live) -> None:
    from ..probe_values import MAX_LISTED, dict_items, nonfinite_tensors

    tensors = nonfinite_tensors(live.probes)
    bad_grads = [(m.get("name"), g) for m in dict_items(live.probes, "modules") for g in m.get("nonfinite_grads") or ()]
    for module, param in bad_grads[:MAX_LISTED]:
        live.evidence.append(f"Gradient of `{module}.{param}` holds NaN/inf.")
    if not tensors:
        live.notes.append("no tensor in the failing frame holds NaN/inf, so the bad values arise inside the "
                          "failing operation.")
        return
    first = tensors[0]
    others = ", ".join(f"`{t.name}`" for t in tensors[1:MAX_LISTED])
    live.notes.append(f"`{first.name}` is the first tensor in the frame holding NaN/inf"
                      + (f" (also {others})." if others else "."))
