"""TRN304 misweighted-average: a total divided by a count of the wrong unit.

The value lattice's `unit` says what a total adds up (analysis/values.py):
per-batch means summed over a batch loop ("means": `total += loss.item()` with a
mean-reduced loss) or a sum over samples ("sum": correct counts, reduction="sum",
`loss.item() * x.size(0)`), and what a denominator counts ("samples":
`len(loader.dataset)`, accumulated batch sizes; "batches": `len(loader)`, `+= 1`
per batch). Two mismatches are certain bugs:
- means / samples: the average is ~batch_size times too small;
- sum / batches: the average is ~batch_size times too large (accuracy above 1).
The mean of per-batch means divided by the number of batches is left alone:
batches differ only in the last one. A loader with batch_size=1 never fires.
The unsafe fix swaps `len(L.dataset)` and `len(L)` where the denominator is one."""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import code
from ..analysis.names import dotted_name
from ..rule import FixSpec, Replace, Rule

_WRONG = {("means", "samples"): ("per-batch mean values", "the number of samples", "too small", "batches"),
          ("sum", "batches"): ("values summed over samples", "the number of batches", "too large", "samples")}


class MisweightedAverage(Rule):
    CODE = "TRN304"
    READS = ("names", "objects", "classes", "functions", "calls", "globals")

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Divide):
            self._check(node, node.left, node.right)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.DivideAssign):
            self._check(node, node.target, node.value)

    def _check(self, node: cst.CSTNode, total: cst.BaseExpression, count: cst.BaseExpression) -> None:
        numerator, denominator = self.values(total), self.values(count)
        wrong = _WRONG.get((numerator.unit, denominator.unit))
        if wrong is None:
            return
        what, per, direction, right = wrong
        name = code(total) if len(code(total)) <= 30 else "the total"
        message = (f"`{name}` adds up {what} but is divided by {per} (`{code(count)[:40]}`): the average is about "
                   f"batch_size times {direction}; divide by the number of {right}, or weight each batch by its "
                   f"size")
        self.report(node, message, fix=self._fix(count, right))

    def _fix(self, count: cst.BaseExpression, right: str) -> FixSpec | None:
        """`len(loader.dataset)` <-> `len(loader)` (parenthesised or not)."""
        inner = count.with_changes(lpar=[], rpar=[]) if isinstance(count, cst.Call) else count
        if not (isinstance(inner, cst.Call) and dotted_name(inner.func) == "len" and len(inner.args) == 1):
            return None
        target = inner.args[0].value
        if right == "batches" and isinstance(target, cst.Attribute) and target.attr.value == "dataset":
            new = code(target.value)
        elif right == "samples" and dotted_name(target) is not None:
            new = f"{code(target)}.dataset"
        else:
            return None
        return FixSpec(f"Divide by the number of {right}", (Replace(inner.args[0].value, new),), safe=False)
