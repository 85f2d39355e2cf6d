"""Hooks of the `host-oom` kind (rules/signatures/*.yaml with kind: host-oom).

`derive(facts, exception_text)`: facts computed from the ones the signature's regexes extracted.
"""

from __future__ import annotations

from typing import Any

from ..extract import parse_size, human_size


def derive(facts: dict[str, Any], text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    n = None
    if facts.get("requested_bytes"):
        n = int(facts["requested_bytes"])
        out["requested"] = human_size(n)
    elif facts.get("requested"):
        n = parse_size(facts["requested"])
    if n is not None:
        out["requested_bytes"] = n
        # More than 16 TiB in one allocation is beyond any single host.
        out["absurd_size"] = n > 16 * 1024**4
    return out
