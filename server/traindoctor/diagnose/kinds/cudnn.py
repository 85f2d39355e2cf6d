"""Hooks of the `cudnn` kind (rules/signatures/*.yaml with kind: cudnn).

`derive(facts, exception_text)`: facts computed from the ones the signature's regexes extracted.
"""

from __future__ import annotations

from typing import Any


_OOM_LIKE_CUDNN = {"NOT_INITIALIZED", "ALLOC_FAILED", "INTERNAL_ERROR", "MAPPING_ERROR"}


def derive(facts: dict[str, Any], text: str) -> dict[str, Any]:
    status = str(facts.get("status_name") or "")
    return {"oom_like": status in _OOM_LIKE_CUDNN, "bad_param": status in ("BAD_PARAM", "NOT_SUPPORTED"),
            "execution_failed": status == "EXECUTION_FAILED"}
