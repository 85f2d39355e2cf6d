"""TRN401 unsafe-log: `log` of a value that can be exactly 0, `sqrt` of one
where a gradient flows (its gradient at 0 is inf), without a guard, and `atanh` of a value that reaches
+-1 (a float32 tanh output, a clamp to [-1, 1]).

Only torch logs count: a math/NumPy log of 0 is -inf in a number no gradient
flows through. The model's `zero` fact says why a value can be 0 (a probability product,
`1 - p`, a ReLU or `clamp(min=0)` (an IoU's intersection), a softplus (0 in float32 below about -104),
`1 - tanh(x)**2` (0 once tanh saturates), a count, a sum of squares of something that can be 0, a spread,
or the function's own test of it against 0 or clamp to at least 1) and which guards rule it out (clamp
with a positive minimum, where, + eps, max(x, eps), exp, an `if`/assert on it). A value only printed or
logged carries no gradient and is not reported, nor one bound to a name that every path rebinds before
any read (analysis/gradient_use.py). softmax and
sigmoid outputs under a torch log are TRN402's. The fixes clamp or add a tiny
value, which can change a finite result: they are unsafe (applied on request).
"""

from __future__ import annotations

import libcst as cst

from ..analysis.gradient_use import reaches_gradient, value_unused
from ..analysis.scopes import code
from ..analysis.names import clamp_parts, literal_number
from ..analysis.values import arg
from ..analysis.vocab import vocab
from ..fixes import atom, sum_operand
from ..rule import FixSpec, Replace, Rule

_WHAT = {"prob": "a probability", "zero": "a value that can be exactly 0", "count": "a count",
         "spread": "a spread (std/var) that can be 0", "squares": "a square",
         "tested": "a value this function itself compares with 0 or clamps to at least 1 elsewhere",
         "underflow": "a softplus output, exactly 0 in float32 where its input is below about -104",
         "saturated": "`1 - tanh(x)**2`, exactly 0 in float32 once the tanh saturates at +-1 (|x| above about "
                      "{tanh:g})"}
# Calls whose arguments are only shown: no gradient flows out of a printed or logged value.
_SHOWN = ("print", "logging.info", "logging.debug", "logging.warning")
_SHOWN_METHODS = ("info", "debug", "warning", "warn", "write", "format", "add_scalar", "set_postfix")


def _short(node: cst.CSTNode) -> str:
    text = code(node)
    return text if len(text) <= 40 else text[:37] + "..."


class UnsafeLog(Rule):
    CODE = "TRN401"
    READS = ("names", "objects", "classes", "functions", "calls", "globals")

    def visit_Call(self, node: cst.Call) -> None:
        v = vocab()
        qualified = self.names.qualify(node.func) or ""
        method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
        receiver_ok = method is not None and not node.args and self.values(node.func.value).kind != "object"
        if qualified in v.logs:
            if not qualified.startswith("torch."):
                return  # math/NumPy values carry no gradient: nothing to turn NaN in backward
            target = arg(node, 0, "input")
        elif method in v.log_methods and receiver_ok and not qualified.startswith(("math.", "numpy.", "torch.")):
            target = node.func.value
        elif qualified in v.sqrts or (method in ("sqrt", "rsqrt") and receiver_ok):
            self._check_sqrt(node, arg(node, 0, "input") if qualified in v.sqrts else node.func.value,
                             qualified not in v.sqrts, inverse=code(node.func).endswith("rsqrt"))
            return
        elif qualified in v.inverse_tanh or (method in v.inverse_tanh_methods and receiver_ok and
                                             not qualified.startswith(("math.", "numpy."))):
            self._check_atanh(node, arg(node, 0, "input") if qualified in v.inverse_tanh else node.func.value)
            return
        elif qualified in v.powers or (method == "pow" and not qualified.startswith(("math.", "numpy."))):
            base = arg(node, 0, "input") if qualified in v.powers else node.func.value
            exponent = arg(node, 1, "exponent") if qualified in v.powers else arg(node, 0, "exponent")
            self._check_root(node, base, exponent, parenthesize=qualified not in v.powers)
            return
        else:
            return
        if target is None or self._guarded(target) or not self.gradient_flows() or self._only_shown() or \
                not reaches_gradient(self.walk.stack, self.names.qualify) or value_unused(self.walk.stack):
            return  # no gradient can come back through this log, or nothing reads it
        if isinstance(target, cst.BinaryOperation) and \
                isinstance(target.operator, cst.Subtract) and self.values(target.right).prob == "sigmoid":
            return  # TRN402: logsigmoid(-x)
        value = self.values(target)
        kind = value.zero or ("prob" if value.prob == "prob" else "")
        kind = "zero" if kind == "selected" else kind  # log(relu(z)) is -inf forward
        if kind not in ("prob", "zero", "count", "tested", "underflow", "saturated"):
            return  # masks are logged on purpose (-inf biases); squares are usually of a positive value
        what = _WHAT[kind].format(tanh=v.fp32_tanh_saturation) if kind == "saturated" else _WHAT[kind]
        message = (f"`log({_short(target)})`: {what}; at 0 the log is -inf and its gradient inf, "
                   f"turning the loss NaN")
        self.report(node, message, fix=self._clamp(target))

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if type(node.operator) is cst.Power:
            self._check_root(node, node.left, node.right, parenthesize=True)

    def _check_root(self, node: cst.CSTNode, base: cst.BaseExpression | None, exponent: cst.BaseExpression | None,
                    parenthesize: bool) -> None:
        """A square root written as a power (`x ** 0.5`, `x.pow(0.5)`, `torch.pow(x, -0.5)`): the same
        gradient as sqrt (inf at 0) and, for -0.5, rsqrt's inf forward. A Python number has no gradient."""
        power = literal_number(exponent) if exponent is not None else None
        if base is None or power not in (0.5, -0.5) or self.values(base).kind == "scalar":
            return
        self._check_sqrt(node, base, parenthesize, inverse=power < 0)

    def _check_sqrt(self, node: cst.CSTNode, target: cst.BaseExpression | None, method: bool,
                    inverse: bool = False) -> None:
        if target is None or not self.gradient_flows() or self._guarded(target) or self._only_shown() or \
                value_unused(self.walk.stack):
            return  # sqrt(0) is 0; only its gradient is the problem (and a root nobody reads has none)
        value = self.values(target)
        rsqrt = inverse  # inf forward at 0
        if value.zero == "selected" and not rsqrt:
            return  # sqrt(relu(z)): ReLU's backward passes 0 where it is 0, so the gradient is 0, not inf
        if value.zero not in ("spread", "squares", "zero", "count", "selected", "tested", "underflow", "cancels",
                              "shortcut") or \
                not self._has_gradient(value) or not reaches_gradient(self.walk.stack, self.names.qualify):
            return  # every use of the root drops the gradient (a mask, a logged metric): nothing inf flows back
        if value.zero == "cancels" and not rsqrt:
            message = (f"`sqrt({_short(target)})` of a squared distance expanded as |x|^2 + |y|^2 - 2 x.y: where two "
                       f"points coincide (every diagonal entry of a set against itself) rounding makes it exactly 0 or "
                       f"slightly negative, so the root is NaN or its gradient inf, and backward NaN")
            self.report(node, message, fix=self._clamp(target, "Clamp the squared distance to a tiny positive "
                                                                 "minimum (an epsilon added can stay negative)"))
            return
        if value.zero == "shortcut" and not rsqrt:
            message = (f"`sqrt({_short(target)})` of a variance computed as mean(x**2) - mean(x)**2: the two terms "
                       f"cancel, so for a constant input, or a mean large next to the spread, rounding makes it "
                       f"exactly 0 or negative: the root is NaN or its gradient inf, and backward NaN (`torch.var` "
                       f"is stable)")
            self.report(node, message, fix=self._clamp(target, "Clamp the variance to a tiny positive minimum"))
            return
        root = f"`sqrt({_short(target)})`" if type(node) is cst.Call and code(node.func).endswith("sqrt") else \
            f"`{_short(node)}`, a square root,"
        message = (f"{root} of a value that can be exactly 0: the gradient of sqrt at 0 is "
                   f"inf, so backward produces inf/NaN")
        new = f"{sum_operand(target)} + {self._tiny(target)}"
        fix = FixSpec("Add the dtype's tiny value under the square root",
                      (Replace(target, f"({new})" if method else new),), safe=False)
        self.report(node, message, fix=fix)

    def _check_atanh(self, node: cst.Call, target: cst.BaseExpression | None) -> None:
        """atanh of a value that reaches +-1: a tanh output (exactly +-1 in float32 once |x| is above about
        fp32_tanh_saturation), or one clamped to [-1, 1]; atanh is +-inf there and its gradient inf. A clamp
        strictly inside (-1, 1) guards it."""
        if target is None or not self.gradient_flows() or self._only_shown() or value_unused(self.walk.stack) or \
                not reaches_gradient(self.walk.stack, self.names.qualify):
            return
        clamp = self._clamp_of(target) if type(target) is cst.Call else None
        if clamp is not None:
            clamped, low, high = clamp
            if (low, high) != (-1.0, 1.0):
                return  # clamped inside (-1, 1), or to bounds that are not numbers
            why = "clamped to [-1, 1], which allows exactly +-1"
        elif self.values(target).prob == "tanh":
            clamped = target
            why = (f"a tanh output, exactly +-1 in float32 once the tanh's input is above about "
                   f"{vocab().fp32_tanh_saturation:g} in size")
        else:
            return
        message = (f"`atanh({_short(target)})` of {why}: atanh is +-inf there and its gradient inf, turning the "
                   f"loss NaN; clamp it strictly inside (-1, 1) first, or keep the value before the tanh")
        self.report(node, message, fix=self._inside_unit_interval(target, clamped))

    def _clamp_of(self, call: cst.Call) -> tuple[cst.BaseExpression | None, float | None, float | None] | None:
        """(the clamped value, low, high) of a clamp call, a bound None where it is not a number literal;
        None when `call` is no clamp."""
        parts = clamp_parts(call, self.names)
        if parts is None:
            return None
        clamped, low, high = parts
        return clamped, literal_number(low), literal_number(high)

    def _inside_unit_interval(self, target: cst.BaseExpression, clamped: cst.BaseExpression | None) -> FixSpec | None:
        """`target` (the clamp, or the value itself) replaced by `clamped.clamp(-1 + eps, 1 - eps)` with the
        dtype's eps: atanh stays finite there (+-8.3 in float32) and every value inside keeps its result and
        gradient."""
        torch = self.names.alias_of("torch")
        if torch is None or clamped is None:
            return None
        eps = f"{torch}.finfo({atom(clamped)}.dtype).eps"
        return FixSpec("Clamp it strictly inside (-1, 1)",
                       (Replace(target, f"{atom(clamped)}.clamp(-1 + {eps}, 1 - {eps})"),), safe=False)

    def _only_shown(self) -> bool:
        """Inside `print(...)`, a logger call or a format string: the value is only shown."""
        for ancestor in self.walk.stack[:-1]:
            kind = type(ancestor)
            if kind is cst.FormattedString:
                return True
            if kind is cst.Call:
                func = ancestor.func  # type: ignore[attr-defined]
                if (self.names.qualify(func) or "") in _SHOWN or \
                        (type(func) is cst.Attribute and func.attr.value in _SHOWN_METHODS):
                    return True
        return False

    def _has_gradient(self, value) -> bool:
        """sqrt(0) is fine forward: only a gradient through it is inf. Evidence that one
        flows: autograd history, or computed in a loss function or a model's forward."""
        if value.grad:
            return True
        function = self.walk.function
        if function is not None and vocab().pattern("loss_name_pattern").search(function.name.value):
            return True  # a loss function: what it computes is backpropagated
        klass = self.walk.klass
        return self.walk.function is not None and self.walk.function.name.value == "forward" and \
            klass is not None and klass.name.value in self.model.model_classes

    def _guarded(self, target: cst.BaseExpression) -> bool:
        """An `if`/`while`/assert on the value (or what it is made of) in this scope."""
        from ..analysis.names import dotted_name

        name = dotted_name(target)
        return name is not None and name in self.scope().guarded

    def _tiny(self, target: cst.BaseExpression) -> str:
        torch = self.names.alias_of("torch")
        if torch is not None and isinstance(target, (cst.Name, cst.Attribute)):
            return f"{torch}.finfo({code(target)}.dtype).tiny"
        return "1e-12"

    def _clamp(self, target: cst.BaseExpression,
               title: str = "Clamp the argument to a tiny positive minimum") -> FixSpec | None:
        if isinstance(target, (cst.Name, cst.Attribute)) and self.names.alias_of("torch") is not None:
            new = f"{atom(target)}.clamp_min({self._tiny(target)})"
        else:
            new = f"{atom(target)}.clamp_min(1e-12)"
        return FixSpec(title, (Replace(target, new),), safe=False)
