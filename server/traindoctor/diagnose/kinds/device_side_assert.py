"""Hooks of the `device-side-assert` kind (rules/signatures/*.yaml with kind: device-side-assert).

`derive`: a label or an index out of range.
`refine`: the kernel's assertion lines from the log.
"""

from __future__ import annotations

import re
from typing import Any

from . import Failure


def derive(facts: dict[str, Any], text: str) -> dict[str, Any]:
    assertion = facts.get("assertion") or ""
    out: dict[str, Any] = {}
    if assertion:
        label = bool(re.search(r"n_classes|t >= 0|cur_target|target_val|n_class", assertion))
        index = bool(re.search(r"srcIndex|index out of bounds|idx_dim|ind >= 0|< sizes|indexSize", assertion))
        out["label_range"] = label
        out["index_range"] = index and not label
        out["assertion_hint"] = ("label outside [0, n_classes)" if label
                                 else "index out of range" if index else assertion[:80])
    return out


def refine(failure: Failure) -> None:
    for line in failure.lines:
        if "Assertion `" in line.text and "failed" in line.text:
            failure.evidence.append(line.text.strip()[:300])
            if len(failure.evidence) > 6:
                break
