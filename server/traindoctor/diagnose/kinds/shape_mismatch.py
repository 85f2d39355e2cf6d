"""Hooks of the `shape-mismatch` kind (rules/signatures/*.yaml with kind: shape-mismatch).

`enrich_live`: the tensors whose shapes the message names, and the layers with a matching size.
"""

from __future__ import annotations

import re

from . import Live

_MATMUL = re.compile(r"\((\d+)x(\d+) and (\d+)x(\d+)\)")
_SIZES = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)")
_BATCH = re.compile(r"batch_size \((\d+)\) to match target batch_size \((\d+)\)")
_BRACKETS = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def enrich_live(live: Live) -> None:
    from ..probe_values import MAX_LISTED, describe, dict_items

    message = live.message
    shapes: set[tuple[int, ...]] = set()
    numbers: set[int] = set()
    if m := _MATMUL.search(message):
        a, b, c, d = (int(x) for x in m.groups())
        shapes |= {(a, b), (c, d), (d, c)}
        numbers |= {b, c}
    for pattern in (_SIZES, _BATCH):
        if m := pattern.search(message):
            numbers |= {int(x) for x in m.groups()}
    for m in _BRACKETS.finditer(message):
        shapes.add(tuple(int(x) for x in m.group(1).split(",")))
    tensors = list(live.probes.tensors)
    involved = [t for t in tensors if t.shape in shapes or (shapes == set() and numbers & set(t.shape))]
    if not involved and numbers:
        involved = [t for t in tensors if numbers & set(t.shape)]
    for t in (involved or tensors)[:MAX_LISTED]:
        live.evidence.append(f"Tensor {describe(t)}.")
    layers = []
    for module in dict_items(live.probes, "modules"):
        for layer in module.get("layers") or ():
            extra = str(layer.get("extra", ""))
            values = {int(x) for x in re.findall(r"=(\d+)", extra)}
            if numbers & values:
                layers.append(f"`{module.get('name')}.{layer.get('name')}` {layer.get('type')}({extra})")
    for layer in layers[:MAX_LISTED]:
        live.evidence.append(f"Layer {layer}.")
    if involved:
        live.notes.append("the mismatched tensors are " + ", ".join(describe(t) for t in involved[:MAX_LISTED]) + ".")
    if layers:
        live.notes.append("layers with a matching size: " + ", ".join(layers[:3]) + ".")
