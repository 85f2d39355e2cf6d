"""TRN405 exp-overflow (strict set): `torch.exp(x)`/`x.exp()` of raw scores
(the lattice's `logits`: a Linear layer's output, `outputs.logits`, a model or
function returning one; or a model's output directly) where the result feeds a
loss. exp overflows float32 above ~88 (float16 above ~11): inf, then NaN.
Subtracting the max or clamping first removes the `logits` fact, so those stay
quiet. Strict: many models keep their scores small in practice."""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import names_in
from ..analysis.names import dotted_name
from ..analysis.values import arg
from ..analysis.vocab import vocab
from ..rule import Rule


class ExpOverflow(Rule):
    CODE = "TRN405"
    READS = ("names", "objects", "classes", "functions", "calls", "globals")

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.names.qualify(node.func) or ""
        if qualified == "torch.exp":
            inner = arg(node, 0, "input")
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "exp" and not node.args and \
                not qualified.startswith(("torch.", "math.", "numpy.")):
            inner = node.func.value
        else:
            return
        if inner is None or not self.gradient_flows():
            return
        value = self.values(inner)
        raw = value.prob == "logits" or (value.role == "output" and value.grad == "known" and not value.prob and
                                         self._model_call(inner))
        statement = self.walk.statement()
        if not raw or statement is getattr(self, "_reported", None) or not self._feeds_loss(node):
            return
        self._reported = statement  # one finding per statement
        self.report(node, "exp of raw scores: float32 overflows to inf above ~88 (float16 above ~11) and the "
                          "loss becomes NaN; subtract the max first (`(x - x.max(-1, keepdim=True).values).exp()`), "
                          "or use logsumexp/softmax/log_softmax, which do")

    def _model_call(self, expr: cst.BaseExpression) -> bool:
        """`model(x)` itself, or a name bound directly to it."""
        name = dotted_name(expr)
        if name is not None:
            definition = self.scope().lookup(name, self.walk.order)
            expr = definition.value if definition is not None and definition.index is None and \
                definition.value is not None else expr
        if not isinstance(expr, cst.Call):
            return False
        callee = self.values(expr.func)
        return callee.kind == "object" and callee.obj in ("model", "sequential")

    def _feeds_loss(self, node: cst.Call) -> bool:
        """The exp is inside a loss call, or its statement binds a name that reaches backward, or it is
        returned by a loss-named function."""
        v = vocab()
        stack = self.walk.stack
        for ancestor in reversed(stack[:-1]):
            if isinstance(ancestor, cst.Call):
                last = (self.names.qualify(ancestor.func) or dotted_name(ancestor.func) or "").rsplit(".", 1)[-1]
                if last in v.loss_functions or v.pattern("loss_name_pattern").search(last):
                    return True
            if isinstance(ancestor, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                targets = ancestor.targets if isinstance(ancestor, cst.Assign) else [ancestor]
                names = {n for t in targets for n in names_in(t.target)}
                return bool(names & (self.scope().feeds_backward() | self._returned_by_loss())) or \
                    any(v.pattern("loss_name_pattern").search(n) for n in names)
            if isinstance(ancestor, cst.Return):
                return self._loss_function()
        return False

    def _loss_function(self) -> bool:
        function = self.walk.function
        return function is not None and bool(vocab().pattern("loss_name_pattern").search(function.name.value))

    def _returned_by_loss(self) -> frozenset[str]:
        """In a loss-named function: the names its returned value is computed from."""
        return self.scope().feeds_return() if self._loss_function() else frozenset()
