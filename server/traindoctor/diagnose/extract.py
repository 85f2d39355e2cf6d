"""Sizes as a signature's regexes pull them out ('1.95 GiB') and as templates show them.

Turning facts into the numbers a kind's templates need is each kind's `derive` hook,
called through `kinds.derive`.
"""

from __future__ import annotations

import re

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
