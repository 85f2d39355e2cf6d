"""Derived facts: the values a signature's regexes pull out, turned into the
numbers and flags its templates need (sizes in bytes, fragmentation, key lists).

`derive(kind, facts, exception_text)` returns new facts; it never raises on
odd values (a fact that cannot be computed is simply absent).
"""

from __future__ import annotations

import re
from typing import Any

_UNITS = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}
_SIZE = re.compile(r"^\s*([\d.]+)\s*([KMGTP]?)i?B?\s*$")


def parse_size(text: str | None) -> int | None:
    """'1.95 GiB' -> bytes; None when it is not a size."""
    if not text:
        return None
    found = _SIZE.match(text)
    if not found:
        return None
    try:
        return int(float(found.group(1)) * _UNITS[found.group(2)])
    except ValueError:
        return None


def human_size(n: int | float) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{value:.2f} PiB"


def derive(kind: str, facts: dict[str, Any], text: str) -> dict[str, Any]:
    from .kinds import hooks

    handler = getattr(hooks(kind), "derive", None)
    if handler is None:
        return {}
    try:
        return handler(facts, text)
    except (ValueError, TypeError, ZeroDivisionError, KeyError):
        return {}  # odd values: keep what the regexes gave
