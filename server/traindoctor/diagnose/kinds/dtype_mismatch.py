"""Hooks of the `dtype-mismatch` kind (rules/signatures/*.yaml with kind: dtype-mismatch).

`derive(facts, exception_text)`: facts computed from the ones the signature's regexes extracted.
"""

from __future__ import annotations

import re
from typing import Any


_DOUBLE = re.compile(r"(?i)^(?:double|float64|torch\.(?:cuda\.)?DoubleTensor|torch\.float64)$")
_LONG = re.compile(r"(?i)^(?:long|int64|torch\.(?:cuda\.)?LongTensor|torch\.int64|int|int32)$")
_FLOATISH = re.compile(r"(?i)^(?:float|float32|half|bfloat16|double|torch\.float\w*|c10::Half|c10::BFloat16)$")


def derive(facts: dict[str, Any], text: str) -> dict[str, Any]:
    a, b = str(facts.get("dtype_a") or ""), str(facts.get("dtype_b") or "")
    return {
        "double_input": bool(_DOUBLE.match(a)),
        "long_for_float": bool(_LONG.match(a) and _FLOATISH.match(b)),
        "float_for_long": bool(_FLOATISH.match(a) and _LONG.match(b)),
    }
