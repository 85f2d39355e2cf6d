"""TRN305 padding-in-metric: token-level accuracy over padded targets without a
mask. `(preds == labels).float().mean()` and `(preds == labels).sum()` count the
padding positions: a pad id the model learns to predict inflates the accuracy,
a pad of -100 (never predicted) deflates it, and either way the number depends
on how much padding a batch has.

Evidence (analysis/padding.py, shared with TRN301): targets in this file are
padded (pad_sequence/F.pad of labels, a target pad id such as TRG_PAD_IDX), the
comparison has a target on one side, and the function never masks (no mask
names, no `!=`/`ne`, no boolean selection, no ignore index). No fix: the mask
needs the pad id of those targets."""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import code
from ..analysis.names import dotted_name
from ..analysis.padding import IGNORE, derived_from_padding, padded_targets
from ..analysis.vocab import vocab
from ..rule import Rule
from ..walk import iter_nodes


class PaddingInMetric(Rule):
    CODE = "TRN305"
    READS = ("names", "padding")

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.names.qualify(func) or ""
        if isinstance(func, cst.Attribute) and func.attr.value in ("sum", "mean") and not node.args and \
                not qualified.startswith(("torch.", "numpy.")):
            reduced = func.value
        elif qualified in ("torch.sum", "torch.mean") and len(node.args) == 1:
            reduced = node.args[0].value
        else:
            return
        comparison = _comparison(reduced)
        if comparison is None:
            return
        target = next((side for side in comparison if self._is_target(side)), None)
        if target is None or not (padded_targets(self.model) or (self._token_level(target) and derived_from_padding(
                self.model, self.scope(), target, self.walk.order))):
            return
        if self._masked(self.walk.function or self.walk.stack[0]):
            return
        mean = func.attr.value == "mean" if isinstance(func, cst.Attribute) else qualified.endswith("mean")
        if not mean and all(value.replace(" ", "") == IGNORE for value in padded_targets(self.model)):
            return  # padded with -100, never predicted: a correct count is right (the denominator is another matter)
        what = "accuracy" if mean else "correct count"
        self.report(node, f"token-level {what} over padded targets (`{code(target)[:30]}`) without a mask: "
                          f"padding positions are counted as tokens, so the metric depends on how much padding "
                          f"each batch has; compare only where `{code(target)[:30]}` is not the pad id")

    def _token_level(self, target: cst.BaseExpression) -> bool:
        """Labels made from padded token ids: shifted (`labels[:, 1:]`) or copied from `input_ids`."""
        if any(isinstance(n, cst.Slice) for n in iter_nodes(target)):
            return True
        name = dotted_name(target)
        definition = self.scope().lookup(name, self.walk.order) if name is not None else None
        return definition is not None and definition.value is not None and "input_ids" in code(definition.value)

    def _is_target(self, expr: cst.BaseExpression) -> bool:
        pattern = vocab().pattern("target_name_pattern")
        for node in iter_nodes(expr):
            name = dotted_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
            if name is not None and pattern.search(name.rsplit(".", 1)[-1]):
                return True
            if isinstance(node, cst.SimpleString) and pattern.search(node.value):
                return True  # batch["labels"]
        return False

    def _masked(self, scope: cst.CSTNode) -> bool:
        """Anything in the function that selects real tokens (conservative: any mask-like name)."""
        v = vocab()
        masky, ignore = v.pattern("mask_name_pattern"), v.pattern("ignore_name_pattern")
        for node in iter_nodes(scope):
            if isinstance(node, cst.Name) and (masky.search(node.value) or ignore.search(node.value) or
                                               v.pattern("pad_name_pattern").match(node.value)):
                return True
            if isinstance(node, cst.Attribute) and (node.attr.value in ("ne", "masked_select", "masked_fill",
                                                                         "nonzero", "where") or
                                                    masky.search(node.attr.value)):
                return True
            if isinstance(node, cst.ComparisonTarget) and isinstance(node.operator, (cst.NotEqual, cst.GreaterThan,
                                                                                     cst.GreaterThanEqual)):
                return True
            if isinstance(node, cst.Integer) and node.value == "100" or isinstance(node, cst.SimpleString) and \
                    "mask" in node.value:
                return True
        return False


def _comparison(expr: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """`a == b` / `a.eq(b)`, through `.float()`/`.long()`/`.double()`/`.int()` and parentheses."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and \
            expr.func.attr.value in ("float", "long", "double", "int", "type", "to", "sum"):
        if expr.func.attr.value == "sum" and expr.args:
            return None  # a per-sequence sum: its own metric
        expr = expr.func.value
    if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1 and \
            isinstance(expr.comparisons[0].operator, cst.Equal):
        return expr.left, expr.comparisons[0].comparator
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "eq" and \
            len(expr.args) == 1:
        return expr.func.value, expr.args[0].value
    return None
