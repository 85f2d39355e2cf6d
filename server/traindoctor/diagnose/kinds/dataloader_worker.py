"""Hooks of the `dataloader-worker` kind (rules/signatures/*.yaml with kind: dataloader-worker).

`derive`: shared memory, timeout and open-file causes.
`refine`: the worker's own exception (its site, kind and fixes).
`enrich_live`: the failing frame's values (the sample index).
"""

from __future__ import annotations

import re
from typing import Any

from . import FALLBACK, Failure, Live, one_line


def derive(facts: dict[str, Any], text: str) -> dict[str, Any]:
    signal = str(facts.get("signal") or "")
    return {
        "shm": "Bus error" in signal or bool(re.search(r"shared memory|shm|bus error", text, re.I)),
        "timeout": facts.get("timeout"),
        "open_files": "Too many open files" in text,
    }


def refine(failure: Failure) -> None:
    chain, block = failure.chain, failure.block
    if chain is None or block is None:
        return
    index = chain.blocks.index(block)
    inner = next((b for b in chain.blocks[index + 1:] if b.relation == "original"), None)
    if inner is None or inner.exception is None:
        return
    from . import derive as derive_facts
    from ..parse import Chain
    from ..select import classify_chain, deepest_user_frame, exception_text

    failure.facts["inner_exception"] = one_line(inner.exception)
    site = deepest_user_frame(inner.frames)
    if site is not None:
        failure.facts["inner_site"] = f"{site.path}:{site.line}"
    inner_match = classify_chain(Chain((inner,)))
    if inner_match.signature.kind != FALLBACK:
        failure.details["inner_kind"] = inner_match.signature.kind
        inner_facts = dict(inner_match.facts)
        inner_facts.update(derive_facts(inner_match.signature.kind, inner_facts, exception_text(inner)))
        failure.details["inner_fixes"] = inner_match.signature.fixes_for(inner_facts)
    failure.evidence.append(failure.facts["inner_exception"])


def enrich_live(live: Live) -> None:
    live.describe_frame()
