"""Hooks of the `dataloader-worker` kind (rules/signatures/*.yaml with kind: dataloader-worker).

`derive(facts, exception_text)`: facts computed from the ones the signature's regexes extracted.
"""

from __future__ import annotations

import re
from typing import Any


def derive(facts: dict[str, Any], text: str) -> dict[str, Any]:
    signal = str(facts.get("signal") or "")
    return {
        "shm": "Bus error" in signal or bool(re.search(r"shared memory|shm|bus error", text, re.I)),
        "timeout": facts.get("timeout"),
        "open_files": "Too many open files" in text,
    }
