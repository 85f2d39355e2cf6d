"""TRN405 exp-overflow (strict set): `torch.exp(x)`/`x.exp()` of raw scores
(the lattice's `logits`: a Linear layer's output, `outputs.logits`, a model or
function returning one; or a model's output directly) where the result feeds a
loss. exp overflows float32 above ~88 (float16 above ~11): inf, then NaN.
Subtracting the max or clamping first removes the `logits` fact, so those stay
quiet. Strict: many models keep their scores small in practice.

A log-sum-exp written out (`x.exp().sum(d).log()`, `torch.log(torch.sum(torch.exp(x)))`) of
unshifted values is reported whatever x is: one term above ~88 makes the sum inf, and when
every term is below ~-104 (float32) the sum is 0 and the log -inf (checked against torch);
`torch.logsumexp` subtracts the max and has neither."""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import names_in
from ..walk import iter_nodes
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
        shape = self._overflow_shape(node, inner)
        if shape:
            self._reported = self.walk.statement()
            self.report(node, shape)
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

    def _overflow_shape(self, node: cst.Call, inner: cst.BaseExpression) -> str:
        """Code whose own shape says the exponent is unbounded: exp clamped from above after it is
        taken (the clamp cannot undo an inf, and its backward multiplies 0 by inf: NaN), or exp
        divided by its own sum (a softmax written out without subtracting the max)."""
        if self._log_of_sum(node):
            return ("a log-sum-exp written out (`log(sum(exp(x)))`) of unshifted values: one term above ~88 "
                    "(float32; ~11 in float16) makes the sum inf, and when every term is below ~-104 the sum "
                    "is 0 and its log -inf, so the loss turns inf/NaN; use `torch.logsumexp(x, dim)`, which "
                    "subtracts the max first")
        if self._bounded(inner, 3):
            return ""
        parent = self.walk.parent
        if type(parent) is cst.Attribute and parent.attr.value in ("clamp", "clip", "clamp_max") and \
                len(self.walk.stack) >= 3 and type(self.walk.stack[-3]) is cst.Call and \
                _upper(self.walk.stack[-3], method=True):
            return ("exp is clamped after it is taken: above ~88 (float32; ~11 in float16) it is already inf, "
                    "and the clamp's backward multiplies a zero gradient by that inf, which is NaN; clamp or "
                    "shift the exponent before exp (`(x - x.max(-1, keepdim=True).values).exp()`)")
        if type(parent) is cst.Arg and len(self.walk.stack) >= 3 and type(self.walk.stack[-3]) is cst.Call and \
                (self.names.qualify(self.walk.stack[-3].func) or "") in ("torch.clamp", "torch.clip") and \
                _upper(self.walk.stack[-3], method=False):
            return ("exp is clamped after it is taken: above ~88 (float32) it is already inf, and the clamp's "
                    "backward multiplies a zero gradient by that inf, which is NaN; clamp the exponent instead")
        bound = self._bound_name()
        if bound is not None and self._divided_by_own_sum(bound):
            return (f"`{bound}` is exp of unshifted scores divided by its own sum, a softmax written out: one "
                    f"score above ~88 (float32) makes it inf/inf = NaN; subtract the max first, or use "
                    f"softmax (for groups, a scatter softmax that subtracts each group's max)")
        return ""

    def _log_of_sum(self, node: cst.Call) -> bool:
        """The exp call is summed and the sum's log taken at once: `x.exp().sum(d).log()`,
        `torch.log(torch.sum(torch.exp(x), d))` and the mixed forms. Quiet when x is shifted
        (any subtraction: `x - x.max()`), or bounded on both sides (tanh, sigmoid, softmax, cos)."""
        stack = self.walk.stack
        summed = _applied(stack, len(stack) - 1, ("sum",), self.names)
        if summed is None or _applied(stack, summed, ("log",), self.names) is None:
            return False
        inner = arg(node, 0, "input") if (self.names.qualify(node.func) or "") == "torch.exp" else node.func.value
        return inner is not None and not self._shifted_or_two_sided(inner, 3)

    def _shifted_or_two_sided(self, expr: cst.BaseExpression, depth: int) -> bool:
        if depth <= 0:
            return True  # too far to see: stay quiet
        name = dotted_name(expr)
        if name is not None:
            definition = self.scope().lookup(name, self.walk.order)
            if definition is None or definition.index is not None or definition.value is None:
                return False
            return self._shifted_or_two_sided(definition.value, depth - 1)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Subtract):
            return True
        if isinstance(expr, cst.Call):
            func = expr.func
            last = func.attr.value if isinstance(func, cst.Attribute) else (dotted_name(func) or "").rsplit(".", 1)[-1]
            if last in ("tanh", "sigmoid", "softmax", "cos", "sin", "cosine_similarity", "normalize"):
                return True
            if last in ("clamp", "clip"):
                method = isinstance(func, cst.Attribute) and not (self.names.qualify(func) or "").startswith("torch.")
                return _upper(expr, method) and arg(expr, 0 if method else 1, "min") is not None
        return self.values(expr).prob in ("softmax", "sigmoid", "prob")

    def _bounded(self, expr: cst.BaseExpression, depth: int) -> bool:
        """Shifted by a max, clamped from above, or a probability/log-probability: exp of it is at most a constant."""
        if depth <= 0:
            return False
        name = dotted_name(expr)
        if name is not None:
            definition = self.scope().lookup(name, self.walk.order)
            return definition is not None and definition.index is None and definition.value is not None and \
                self._bounded(definition.value, depth - 1)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Subtract):
            return any(isinstance(n, cst.Name) and n.value in ("max", "amax", "logsumexp")
                       for n in iter_nodes(expr.right))
        if _nonpositive(expr):
            return True  # exp(-d**2 / (2 * sigma**2)) <= 1: a Gaussian, not scores
        if isinstance(expr, cst.UnaryOperation):
            return False
        if isinstance(expr, cst.Call):
            func = expr.func
            last = func.attr.value if isinstance(func, cst.Attribute) else (dotted_name(func) or "").rsplit(".", 1)[-1]
            if last in ("clamp", "clip", "clamp_max", "tanh", "sigmoid", "softmax", "log_softmax", "logsigmoid",
                        "cos", "sin", "cosine_similarity", "normalize", "minimum"):
                return last not in ("clamp", "clip") or _upper(expr, method=isinstance(func, cst.Attribute) and
                                                               not (self.names.qualify(func) or "").startswith("torch."))
        value = self.values(expr)
        return value.prob in ("softmax", "sigmoid", "prob", "logprob")

    def _bound_name(self) -> str | None:
        """The name the exp call is assigned to whole (`out = src.exp()`)."""
        parent = self.walk.parent
        if type(parent) is cst.Assign and len(parent.targets) == 1:
            return dotted_name(parent.targets[0].target)
        return None

    def _divided_by_own_sum(self, name: str) -> bool:
        """A later `name / <sum of name>` (`.sum(...)`, `torch.sum`, `scatter_add`, `scatter_sum`) in this scope."""
        root = self.walk.function
        if root is None:
            return False
        for node in iter_nodes(root):
            if type(node) is cst.BinaryOperation and type(node.operator) is cst.Divide and \
                    dotted_name(node.left) == name and name in names_in(node.right):
                for call in iter_nodes(node.right):
                    if type(call) is cst.Call:
                        func = call.func
                        last = func.attr.value if type(func) is cst.Attribute else dotted_name(func) or ""
                        if last.rsplit(".", 1)[-1] in ("sum", "scatter_add", "scatter_sum", "scatter_add_"):
                            return True
        return False

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


def _applied(stack: list, at: int, names: tuple[str, ...], resolver) -> int | None:
    """The index in `stack` of the call that applies one of `names` directly to the value at
    `stack[at]`: as a method (`value.sum(...)`) or as torch's function of it (`torch.sum(value)`)."""
    value = stack[at]
    if at >= 2 and type(stack[at - 1]) is cst.Attribute and stack[at - 1].value is value and \
            stack[at - 1].attr.value in names and type(stack[at - 2]) is cst.Call and stack[at - 2].func is stack[at - 1]:
        return at - 2
    if at >= 2 and type(stack[at - 1]) is cst.Arg and type(stack[at - 2]) is cst.Call and \
            stack[at - 2].args and stack[at - 2].args[0] is stack[at - 1] and \
            (resolver.qualify(stack[at - 2].func) or "") in tuple(f"torch.{n}" for n in names):
        return at - 2
    return None


def _upper(call: cst.Call, method: bool) -> bool:
    """`.clamp(max=...)`, `.clamp(lo, hi)`, `.clamp_max(hi)`, `torch.clamp(x, lo, hi)`: an upper bound is given."""
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "clamp_max":
        return True
    return arg(call, 1 if method else 2, "max") is not None


def _nonnegative(expr: cst.BaseExpression) -> bool:
    """Written so that it is >= 0 whatever its operands: a square, abs, relu, exp, a positive
    number, and sums, products and quotients of those."""
    if isinstance(expr, cst.Integer | cst.Float):
        return True
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, cst.Power):
            exponent = expr.right
            return isinstance(exponent, cst.Integer) and int(exponent.value) % 2 == 0 or _nonnegative(expr.left)
        if isinstance(expr.operator, (cst.Add, cst.Multiply, cst.Divide)):
            return _nonnegative(expr.left) and _nonnegative(expr.right)
        return False
    if isinstance(expr, cst.Call):
        func = expr.func
        last = func.attr.value if isinstance(func, cst.Attribute) else (dotted_name(func) or "").rsplit(".", 1)[-1]
        return last in ("abs", "square", "relu", "exp", "sqrt", "norm", "softplus", "sigmoid", "softmax")
    return False


def _nonpositive(expr: cst.BaseExpression) -> bool:
    """`-(x ** 2)`, `-d / (2 * s ** 2)`, `-x.abs() * c`: the negation of a non-negative value, scaled."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return _nonnegative(expr.expression)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Multiply, cst.Divide)):
        return (_nonpositive(expr.left) and _nonnegative(expr.right)) or \
            (isinstance(expr.operator, cst.Multiply) and _nonnegative(expr.left) and _nonpositive(expr.right))
    return False
