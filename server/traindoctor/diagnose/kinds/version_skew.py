"""Hooks of the `version-skew` kind (rules/signatures/*.yaml with kind: version-skew).

`derive(facts, exception_text)`: facts computed from the ones the signature's regexes extracted.
"""

from __future__ import annotations

from typing import Any


def derive(facts: dict[str, Any], text: str) -> dict[str, Any]:
    module = str(facts.get("module") or "")
    return {"module_top": module.split(".")[0]} if module else {}
