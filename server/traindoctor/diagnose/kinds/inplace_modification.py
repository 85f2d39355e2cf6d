"""Hooks of the `inplace-modification` kind (rules/signatures/*.yaml with kind: inplace-modification).

`derive`: how many times the saved tensor was modified.
`refine`: the in-place statement in the user's source, with its out-of-place rewrite.
`enrich_live`: the frame's tensor at the version the message names.
"""

from __future__ import annotations

import re
from typing import Any

from . import Failure, Live


def derive(facts: dict[str, Any], text: str) -> dict[str, Any]:
    if facts.get("version") and facts.get("expected"):
        return {"version_changes": int(facts["version"]) - int(facts["expected"])}
    return {}


def refine(failure: Failure) -> None:
    from .. import source
    from ..select import deepest_user_frame

    frames = failure.frames
    # The forward function anomaly mode names, often not on the backward's stack, is searched first.
    forward = [f for chain in failure.forward_chains for f in chain.frames]
    producer = deepest_user_frame(forward)
    if producer is not None:
        failure.facts["forward_site"] = f"{producer.path}:{producer.line}"
        failure.evidence.append(f"anomaly mode: the forward call that created it is {producer.path}:{producer.line}"
                                + (f": {producer.code}" if producer.code else ""))
        frames = tuple(frames) + tuple(forward)
    sources = source.user_sources(frames, failure.base_dir)
    site = source.locate_inplace(str(failure.facts.get("grad_fn") or ""), sources)
    if site is not None:
        failure.facts.update(inplace_site=f"{site.path}:{site.line}", inplace_code=site.code, inplace_name=site.name,
                             producer_line=site.producer_line, producer_code=site.producer_code,
                             out_of_place=source.out_of_place(site))
        confirmed = producer is not None and (producer.path, producer.line) == (site.path, site.producer_line)
        failure.evidence.append(f"in-place operation: {site.path}:{site.line}: `{site.code}` modifies `{site.name}`, "
                                f"produced by `{site.producer_code}` (line {site.producer_line})"
                                + (", the forward call anomaly mode names" if confirmed else ""))


_SAVED = re.compile(r"\[torch\.(\w+) \[([\d, ]*)\]\].*?is at version (\d+); expected version (\d+)", re.S)


def enrich_live(live: Live) -> None:
    from ..probe_values import MAX_LISTED, describe

    m = _SAVED.search(live.message)
    if not m:
        return
    shape = tuple(int(x) for x in m.group(2).split(",") if x.strip())
    version, expected = int(m.group(3)), int(m.group(4))
    tensors = live.probes.tensors
    suspects = [t for t in tensors if t.shape == shape and t.version == version]
    if not suspects:
        suspects = [t for t in tensors if t.shape == shape and (t.version or 0) > expected]
    for t in suspects[:MAX_LISTED]:
        live.evidence.append(f"Tensor {describe(t)} is at version {t.version} (modified in place).")
    if suspects:
        names = ", ".join(f"`{t.name}`" for t in suspects[:3])
        live.notes.append(f"modified in place after autograd saved it: {names} "
                          f"(version {version}, expected {expected}).")
