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


# A learning rate at or above these is far outside the usual range of the optimizer family.
_ADAPTIVE = ("Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad", "Adadelta", "Adafactor")
_HIGH_LR = {"adaptive": 0.05, "other": 5.0}


def _optimizer_settings(live: Live) -> None:
    """The optimizers' settings read live (lr, betas, eps, weight decay; a GradScaler's scale) as
    evidence; a learning rate far above its family's usual range is said first: it is what makes
    weights diverge."""
    from ..probe_values import dict_items

    for optimizer in dict_items(live.probes, "optimizers")[:5]:
        if "error" in optimizer:
            continue
        if optimizer.get("scaler"):  # AMP's GradScaler: its scale, read live
            if optimizer.get("enabled") and isinstance(optimizer.get("scale"), (int, float)):
                live.evidence.append(f"GradScaler `{optimizer.get('name')}`: scale {optimizer['scale']:g}.")
            continue
        lrs = [lr for lr in optimizer.get("lr") or () if isinstance(lr, (int, float))]
        settings = optimizer.get("settings") if isinstance(optimizer.get("settings"), dict) else {}
        shown = [f"lr {', '.join(f'{lr:g}' for lr in lrs)}"] if lrs else []
        shown += [f"{k.replace('_', ' ')} {tuple(v) if isinstance(v, list) else f'{v:g}'}" for k, v in settings.items()]
        if shown:
            live.evidence.append(f"Optimizer `{optimizer.get('name')}` ({optimizer.get('type')}): " + ", ".join(shown) + ".")
        family = "adaptive" if str(optimizer.get("type")) in _ADAPTIVE else "other"
        high = [lr for lr in lrs if lr >= _HIGH_LR[family]]
        if high:
            live.notes.insert(0, f"the learning rate of `{optimizer.get('name')}` ({high[0]:g}) is far above the usual "
                                 f"range for {optimizer.get('type')}: too large a step makes the weights diverge until "
                                 "they overflow; lower it first (by 10x or more, or add warm-up).")
            live.details["lr_too_high"] = {"optimizer": optimizer.get("name"), "lr": high[0]}


def enrich_live(live: Live) -> None:
    from ..probe_values import MAX_LISTED, dict_items, nonfinite_tensors

    _optimizer_settings(live)
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
