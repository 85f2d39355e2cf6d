"""TRN406 division-by-reduction (strict set): division by a value that can really be 0.

Only two kinds of evidence count, both about what the value is, never its name:

- the function itself says it can be 0: it compares the same value with 0 or clamps it to a
  count of at least 1 elsewhere (zero_evidence.py), and this
  division has no such guard (a count clamped in one branch and not in the other; a result
  overwritten where the count is 0, whose gradient is still 0/0 = NaN);
- a norm or sum over the rows of data the function is given (`x / x.norm(dim=1)`, a cosine
  `dot / (a.norm(dim=1) * b.norm(dim=1))`, a mean over an adjacency row `(adj @ x) / adj.sum(-1)`),
  where the data is a parameter that no in-file caller fills with a learned output: an all-zero row
  (padding, an isolated node, an all-zero pixel) makes it 0. Norms of embeddings, latents and
  projections, and whole-batch counts, stay quiet;
- a count of where a condition the code computes holds (`mask = labels != -100`), per row
  (`(lp * mask).sum(-1) / mask.sum(-1)`) or under another count (`correct.sum() / mask.sum()`): 0 where
  it holds nowhere (a padded row, no labelled pixel, every label ignored). A mask known only by its
  name (values.py `named`) is not one;
- the standard deviation of a batch statistic, recomputed in a loop (advantages normalised per
  minibatch): one constant batch (sparse rewards, a batch of one) gives 0. The std of a learned
  output (a model's prediction, a latent) is not: it is never constant in practice.

The norm of an embedding, a bincount, a dataset column's std stay quiet: whether they can be 0
is not in the code. Until 2026-12-06 a whole batch's count of valid tokens stayed quiet too (0 only
where PyTorch's own mean is NaN as well); three dev bug-fix commits guard exactly that (f014, f029,
f034); it is reported now where the count is per row (a padded row) or under another count (a metric:
accuracy, IoU), and a loss over a whole batch's count stays quiet. Guards (clamp, `+ eps`, where, an
`if`/assert on the value) keep it quiet. For norms the suggestion is `F.normalize`, which has an eps."""

from __future__ import annotations

import libcst as cst

from ..analysis.names import arg, dotted_name, literal_number
from ..analysis.recorded import recorded_window
from ..analysis.scopes import code, names_in
from ..analysis.values import ZERO_POSSIBLE, Value, over_rows
from ..analysis.vocab import vocab
from ..analysis.zero_evidence import subject as zero_subject
from ..fixes import atom
from ..rule import FixSpec, Related, Replace, Rule
from ..walk import iter_nodes

_WHERE = ("torch.where", "torch.masked_fill")


class DivisionByReduction(Rule):
    CODE = "TRN406"
    READS = ("names", "objects", "classes", "functions", "calls", "globals")

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Divide):
            self._check(node, node.right)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.DivideAssign):
            self._check(node, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        """Division written as a call: `a.div(b)` divides by its first argument, `torch.div(a, b)`
        by its second, `x.reciprocal()` and `torch.reciprocal(x)` by `x`."""
        v = vocab()
        qualified = self.names.qualify(node.func) or ""
        method = node.func.attr.value if type(node.func) is cst.Attribute else ""
        tensor_method = method in (*v.division_methods, *v.reciprocal_methods) and \
            not qualified.startswith(("numpy.", "math.", "operator.")) and \
            self.values(node.func.value).kind in ("tensor", "unknown")  # type: ignore[attr-defined]
        if qualified in v.division_functions:
            denominator = arg(node, 1, "other")
        elif qualified in v.reciprocal_functions:
            denominator = arg(node, 0, "input")
        elif tensor_method and method in v.division_methods:
            denominator = arg(node, 0, "other")
        elif tensor_method and method in v.reciprocal_methods and not node.args:
            denominator = node.func.value  # type: ignore[attr-defined]
        else:
            return
        if denominator is not None:
            self._check(node, denominator)

    def _check(self, node: cst.CSTNode, denominator: cst.BaseExpression) -> None:
        read = names_in(denominator)
        if read & self.scope().guarded or not self.gradient_flows() or self._guarded_by_where(read):
            return
        value = self.values(denominator)
        if value.zero not in ZERO_POSSIBLE or any(n.startswith(("np.", "numpy.")) for n in read):
            return
        evidence = self.values.evidence(self.walk.function)
        subject = next((n for n in sorted(read) if n in evidence and not self._reduced(denominator, n)), None)
        text = code(denominator)
        short = text if len(text) <= 40 else text[:37] + "..."
        related: tuple[Related, ...] = ()
        if subject is not None:
            said = evidence[subject]
            if self._overwritten(node, said) and not self._gradient_into(node, value):
                return  # finite forward once overwritten, and no gradient to turn NaN in backward
            how = f"compares `{subject}` with 0" if type(said) is cst.Comparison else \
                f"clamps `{subject}` to at least 1"
            what = f"`{short}`" if zero_subject(denominator) == subject else \
                f"`{short}`, which is 0 where `{subject}` is"
            message = (f"division by {what}: this function itself {how} elsewhere, so it can be 0, and "
                       f"here it is not guarded: the result is inf/NaN where it is 0, and overwriting the result "
                       f"afterwards still leaves a NaN gradient (0/0 in backward)")
            related = (Related(said, f"here the function {how}"),)
            fix = self._like_the_guard(denominator, subject, said, value.kind == "scalar")
        elif value.zero == "spread" and self.walk.loops_here():
            message = (f"division by `{short}`, the spread of a batch recomputed in a loop: one constant batch "
                       f"(or a batch of one) makes it 0, and the result and every gradient NaN")
            fix = self._add_epsilon(denominator, not _argument_of(node, denominator))
        elif value.zero == "spread" and (window := recorded_window(denominator, self.scope(), self.walk.order,
                                                                    self.walk.klass, self.names.qualify)):
            message = (f"division by `{short}`, the spread of the values recorded in `{window}` (one per call): "
                       f"when the recorded values are all equal it is exactly 0, and the result inf/NaN")
            fix = self._add_epsilon(denominator, not _argument_of(node, denominator))
        elif value.zero == "rows":
            message = (f"division by `{short}`, a norm or sum over rows or entries of data this function is given: "
                       f"a row that is all zeros (a padded position, an isolated node, an all-zero vector, no positive "
                       f"count) makes it exactly 0, "
                       f"and the result there inf/NaN (0/0), with a NaN gradient")
            fix = self._zero_to_one(denominator)
        elif value.zero == "count" and not value.named and \
                (_per_row(denominator, self.names.qualify) or self._counted(self._numerator(node))):
            # a mask the code computes, not one guessed by name: counted per row (a padded row), or a
            # whole batch's count under a count (accuracy, IoU: a metric); a loss over a whole batch's
            # count is NaN only where PyTorch's own mean reduction is NaN too (an empty batch): left alone
            message = (f"division by `{short}`, a count (or share) of the elements where a condition on the data "
                       f"holds: a batch or row where it holds nowhere (all padding, no labelled pixel, no positive) makes "
                       f"it exactly 0, and the result inf/NaN there (0/0), with a NaN gradient where one flows")
            fix = self._at_least_one(denominator)
        else:
            return
        self.report(node, message, fix=fix, related=related)

    def _reduced(self, denominator: cst.BaseExpression, name: str) -> bool:
        """`name`'s elements are reduced on the way to the denominator (`mask.sum()`, `torch.norm(x)`): that
        the function compares them with 0 says nothing about whether their sum or norm is 0."""
        v = vocab()
        for inner in iter_nodes(denominator):
            if type(inner) is not cst.Call:
                continue
            if type(inner.func) is cst.Attribute and inner.func.attr.value in v.reduction_methods:
                reduced = inner.func.value
            elif (self.names.qualify(inner.func) or "") in (*v.sums, *v.norms, *v.spreads, *v.counts):
                reduced = arg(inner, 0, "input")
            else:
                continue
            if reduced is not None and name in names_in(reduced):
                return True
        return False

    def _overwritten(self, node: cst.CSTNode, said: cst.CSTNode) -> bool:
        """The comparison with 0 that makes `said` evidence picks the elements of this division's result
        to overwrite: `scale = a / deg` then `scale[deg == 0] = 1`."""
        if type(said) is not cst.Comparison:
            return False
        bound = next((ancestor for ancestor in reversed(self.walk.stack) if type(ancestor) is cst.Assign), None)
        if bound is None or len(bound.targets) != 1 or (result := dotted_name(bound.targets[0].target)) is None:
            return False
        for statement in iter_nodes(self.walk.function or self.walk.stack[0]):
            if type(statement) is cst.Assign and any(
                    type(t.target) is cst.Subscript and dotted_name(t.target.value) == result and
                    any(n is said for e in t.target.slice for n in iter_nodes(e)) for t in statement.targets):
                return True
        return False

    def _gradient_into(self, node: cst.CSTNode, divisor: Value) -> bool:
        """A gradient can reach the quotient: a numerator that is not a Python number (a tensor, unknown), or a
        denominator with autograd history. Overwritten elements get a zero gradient, and 0 times the inf
        derivative at 0 is NaN only where such a gradient flows."""
        numerator = self._numerator(node)
        return numerator is None or self.values(numerator).kind != "scalar" or divisor.tensor_with_history

    def _numerator(self, node: cst.CSTNode) -> cst.BaseExpression | None:
        """What `node` divides: `a` of `a / b`, the target of `a /= b`, the receiver of `a.div(b)`."""
        if type(node) is cst.BinaryOperation:
            return node.left
        if type(node) is cst.AugAssign:
            return node.target  # type: ignore[return-value]
        if type(node) is cst.Call and type(node.func) is cst.Attribute:
            return node.func.value
        return None

    def _counted(self, numerator: cst.BaseExpression | None) -> bool:
        """The numerator is a count too (`correct.sum()`, `1.0 * torch.sum(valid * (preds == segs))`): the
        quotient is a ratio of counts, a metric (accuracy, IoU, recall)."""
        while type(numerator) is cst.BinaryOperation and type(numerator.operator) is cst.Multiply:
            numerator = numerator.right if literal_number(numerator.left) is not None else \
                numerator.left if literal_number(numerator.right) is not None else None
        return numerator is not None and self.values(numerator).zero == "count"

    def _add_epsilon(self, denominator: cst.BaseExpression, operand: bool) -> FixSpec:
        """`(std + 1e-8)`; no parentheses as a call's argument (`a.div(std + 1e-8)`)."""
        bare = denominator.with_changes(lpar=[], rpar=[]) if denominator.lpar else denominator
        new = f"({code(bare)} + 1e-8)" if operand else f"{code(bare)} + 1e-8"
        return FixSpec("Add an epsilon to the std", (Replace(denominator, new),), safe=False)

    def _at_least_one(self, denominator: cst.BaseExpression) -> FixSpec:
        """A count clamped to at least 1: where the condition holds nowhere the masked numerator is 0 too,
        so the result is 0 there and unchanged everywhere else."""
        return FixSpec("Count at least 1", (Replace(denominator, f"{atom(denominator)}.clamp_min(1)"),), safe=False)

    def _zero_to_one(self, denominator: cst.BaseExpression) -> FixSpec:
        """1 where the denominator is 0: the row's result is then its numerator, 0 for an all-zero row
        (what `F.normalize` gives), and every other row keeps its value and gradient."""
        text = atom(denominator)
        return FixSpec("Divide all-zero rows by 1 instead of 0",
                       (Replace(denominator, f"{text}.masked_fill({text} == 0, 1)"),), safe=False)

    def _like_the_guard(self, denominator: cst.BaseExpression, subject: str, said: cst.CSTNode,
                        number: bool) -> FixSpec | None:
        """Guard the denominator the way the function guards it elsewhere; no fix when the
        denominator is more than the guarded value (`log(deg + 1)`)."""
        if zero_subject(denominator) != subject:
            return None
        text = code(denominator)
        number = number or text.endswith(".item()")  # a Python number: no tensor methods
        if type(said) is cst.Comparison:  # 1 where it is 0, itself elsewhere
            new = f"max({text}, 1)" if number else \
                f"{atom(denominator)}.masked_fill({atom(denominator)} == 0, 1)"
        else:
            low = arg(said, 0, "min") if type(said.func) is cst.Attribute else arg(said, 1, "min")  # type: ignore
            if low is None:
                return None
            new = f"max({text}, {code(low)})" if number else \
                f"{atom(denominator)}.clamp_min({code(low)})"
        return FixSpec("Guard it as the function does elsewhere", (Replace(denominator, new),), safe=False)

    def _guarded_by_where(self, read: set[str]) -> bool:
        """Inside `torch.where(n > 0, x / n, ...)`, or an expression whose condition reads the denominator."""
        for ancestor in self.walk.stack[:-1]:
            if type(ancestor) is cst.Call and (self.names.qualify(ancestor.func) or "") in _WHERE and \
                    ancestor.args and names_in(ancestor.args[0].value) & read:
                return True
        return False


def _per_row(denominator: cst.BaseExpression, qualify) -> bool:
    """The denominator is reduced over some dimensions in place (`mask.sum(-1)`, `torch.sum(m, dim=1)`):
    one count per row, 0 for a row where the condition holds nowhere (a padded sequence)."""
    for inner in iter_nodes(denominator):
        if type(inner) is not cst.Call:
            continue
        method = inner.func.attr.value if type(inner.func) is cst.Attribute else ""
        function = (qualify(inner.func) or "") in vocab().sums
        if method in ("sum", "mean", "count_nonzero") and not function and over_rows(inner, 0) or \
                function and over_rows(inner, 1):
            return True
    return False


def _argument_of(node: cst.CSTNode, expr: cst.BaseExpression) -> bool:
    """`expr` is one of the call `node`'s arguments (no parentheses needed around a sum there)."""
    return type(node) is cst.Call and any(a.value is expr for a in node.args)
