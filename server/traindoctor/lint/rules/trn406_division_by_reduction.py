"""TRN406 division-by-reduction (strict set): division by a count, a spread or a
norm that can be 0 (an empty mask, a constant batch, a zero vector).

Often fine in practice (masks that always keep a CLS/EOS token, embeddings that
are never all-zero), so it is opt-in: `select = ["strict"]`. Guards (clamp,
`+ eps`, where, an `if`/assert on the value) keep it quiet. For norms the
suggestion is `F.normalize`, which has an eps."""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import code
from ..analysis.names import dotted_name
from ..analysis.vocab import vocab
from ..fixes import atom
from ..rule import FixSpec, Replace, Rule


class DivisionByReduction(Rule):
    CODE = "TRN406"
    READS = ("names", "objects", "classes", "functions", "calls", "globals")

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Divide):
            self._check(node, node.right)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.DivideAssign):
            self._check(node, node.value)

    def _check(self, node: cst.CSTNode, denominator: cst.BaseExpression) -> None:
        base = denominator
        while isinstance(base, cst.Call) and isinstance(base.func, cst.Attribute) and \
                base.func.attr.value in vocab().pass_through_methods:
            base = base.func.value  # counts.unsqueeze(-1), counts.float(): the counts
        name = dotted_name(base)
        if (name is not None and name in self.scope().guarded) or not self.gradient_flows():
            return
        value = self.values(denominator)
        if value.zero not in ("count", "spread", "norm"):
            return
        if isinstance(denominator, cst.Call) and isinstance(denominator.func, cst.Attribute) and \
                denominator.func.attr.value == "sqrt":
            return
        text = code(denominator)
        short = text if len(text) <= 40 else text[:37] + "..."
        if value.zero == "count":
            message = (f"division by `{short}`, a count that is 0 when nothing is selected (an empty mask, a batch "
                       f"of padding): the result is NaN and so is every gradient")
            new = f"max({text}, 1)" if text.endswith(".item()") else f"{atom(denominator)}.clamp_min(1)"
            fix = FixSpec("Count at least 1", (Replace(denominator, new),), safe=False)
        else:
            what = "a norm" if value.zero == "norm" else "a spread"
            message = (f"division by `{short}`, {what} that is 0 for constant or all-zero inputs: the result is "
                       f"inf/NaN and so is every gradient" + ("; `F.normalize` has an eps" if value.zero == "norm"
                                                               else ""))
            bare = denominator.with_changes(lpar=[], rpar=[]) if denominator.lpar else denominator
            fix = FixSpec("Add a tiny epsilon to the denominator", (Replace(denominator, f"({code(bare)} + 1e-12)"),),
                          safe=False)
        self.report(node, message, fix=fix)
