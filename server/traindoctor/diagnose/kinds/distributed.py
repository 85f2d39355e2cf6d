"""Hooks of the `distributed` kind (rules/signatures/*.yaml with kind: distributed).

`derive(facts, exception_text)`: facts computed from the ones the signature's regexes extracted.
"""

from __future__ import annotations

from typing import Any


def derive(facts: dict[str, Any], text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if facts.get("timeout_ms"):
        out["timeout_s"] = f"{int(facts['timeout_ms']) / 1000:g}"
    return out
