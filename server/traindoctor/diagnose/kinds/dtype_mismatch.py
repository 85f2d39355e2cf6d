"""Hooks of the `dtype-mismatch` kind (rules/signatures/*.yaml with kind: dtype-mismatch).

`derive`: which dtype confusion it is (float64 input, int64 for float, float for int64).
`enrich_live`: the frame's tensors grouped by dtype.
"""

from __future__ import annotations

import re
from typing import Any

from . import Live


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


def enrich_live(live: Live) -> None:
    from . import split_by

    split_by(live, "dtype")
