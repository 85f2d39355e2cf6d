"""Hooks of the `inplace-modification` kind (rules/signatures/*.yaml with kind: inplace-modification).

`derive(facts, exception_text)`: facts computed from the ones the signature's regexes extracted.
"""

from __future__ import annotations

from typing import Any


def derive(facts: dict[str, Any], text: str) -> dict[str, Any]:
    if facts.get("version") and facts.get("expected"):
        return {"version_changes": int(facts["version"]) - int(facts["expected"])}
    return {}
