"""TRN401 unsafe-log and TRN402 log-of-softmax.

TRN401: `log` of a value that can be exactly 0, `sqrt` of a value that can be
0 (its gradient there is inf), and division by a reduction that can be 0 — all
without an epsilon or a clamp. TRN402: `log(softmax(x))`, `log(sigmoid(x))`
and `BCELoss` on `sigmoid(...)` outputs, where `log_softmax`, `logsigmoid` and
`BCEWithLogitsLoss` are the stable forms.

Both rules read an argument through `classify`: a small abstract value
("can it be exactly 0, and why") computed from the expression and from what
local names were last bound to. Unknown values never fire: a log of something
we cannot see is not a finding.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from ..context import dotted_name
from ..rule import FactCollector, FixSpec, Invalid, Related, Replace, Rule
from ._local_bindings import Bindings, record_module_binding

# Abstract values. SOFTMAX/SIGMOID: outputs of those functions (possibly
# reshaped or indexed); PROB: a probability by name; ZERO: anything else that
# can be exactly 0; MASK: 0/1 masks; COUNT: a count of mask elements;
# SQUARES: squares (0 at 0); SPREAD: std/var/norm/sum of squares.
SOFTMAX, SIGMOID, PROB, ZERO, MASK, COUNT, SQUARES, SPREAD = (
    "softmax", "sigmoid", "prob", "zero", "mask", "count", "squares", "spread")
# Visibly kept away from 0 (an eps added, a positive clamp, an exp, a literal):
# wins over what a name suggests.
SAFE = "safe"
_SAFE_FUNCTIONS = {"torch.exp", "torch.log_softmax", "torch.nn.functional.log_softmax",
                   "torch.nn.functional.logsigmoid", "torch.maximum", "numpy.maximum", "numpy.exp", "math.exp",
                   "torch.tensor", "torch.ones", "torch.ones_like", "torch.full", "torch.arange", "max"}
_PROBABILITIES = {SOFTMAX, SIGMOID, PROB}

_LOGS = {"torch.log", "torch.log2", "torch.log10", "math.log", "math.log2", "math.log10", "numpy.log",
         "numpy.log2", "numpy.log10", "torch.special.log"}
_SQRTS = {"torch.sqrt", "torch.rsqrt"}
_SOFTMAXES = {"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax", "torch.Tensor.softmax"}
_SIGMOIDS = {"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit", "torch.Tensor.sigmoid"}
_SOFTMAX_MODULES = {"torch.nn.Softmax", "torch.nn.modules.activation.Softmax"}
_SIGMOID_MODULES = {"torch.nn.Sigmoid", "torch.nn.modules.activation.Sigmoid"}
_RELUS = {"torch.relu", "torch.nn.functional.relu", "torch.nn.functional.relu6", "torch.abs", "torch.square"}
# |x| and x**2 are 0 at 0 for any x: a sqrt of them has an inf gradient there,
# but a log of them is usually a deliberate log-magnitude of a nonzero value.
_MAGNITUDES = {"torch.abs", "torch.square"}
_SPREADS = {"torch.std", "torch.var", "torch.norm", "torch.linalg.norm", "torch.linalg.vector_norm",
            "numpy.std", "numpy.var", "numpy.linalg.norm", "torch.nn.functional.mse_loss"}
_SUMS = {"torch.sum", "numpy.sum", "torch.mean", "numpy.mean"}
_COUNTS = {"torch.count_nonzero", "numpy.count_nonzero", "torch.bincount", "numpy.bincount"}
_COMPARE_METHODS = {"ne", "eq", "gt", "lt", "ge", "le", "bool", "logical_not", "logical_and", "logical_or", "isfinite"}
# Methods that keep "can be exactly 0" of their receiver (dtype, shape, device).
_PASS_THROUGH = {"float", "double", "half", "bfloat16", "long", "int", "to", "type", "type_as", "cuda", "cpu",
                 "view", "reshape", "unsqueeze", "squeeze", "flatten", "contiguous", "expand", "expand_as",
                 "transpose", "permute", "detach", "clone", "gather", "index_select", "masked_select", "t",
                 "view_as", "reshape_as", "repeat", "narrow", "select", "item", "numpy", "squeeze_", "unsqueeze_"}
_BINARY_BCE = {"torch.nn.functional.binary_cross_entropy"}
_BCE_MODULES = {"torch.nn.BCELoss", "torch.nn.modules.loss.BCELoss"}
_PROB_NAME = re.compile(r"^(?!.*log)(probs?|probabilities|probas?|\w+_probs?|\w+_probabilities|probs?_\w+)$",
                        re.IGNORECASE)
_MASK_NAME = re.compile(r"^(?:\w+_)?(mask|masks)(?:_\w+)?$|^(non_?pad|not_pad|is_valid|valid_mask)$", re.IGNORECASE)
_EPS_NAME = re.compile(r"(^|_)(eps|epsilon|tiny|smooth|smoothing)(_|\d|$)|^min_(val|value|prob|std|norm)$", re.IGNORECASE)
_EPSILON = "1e-12"


def _number(node: cst.BaseExpression) -> float | None:
    """The value of a numeric literal (with sign), else None."""
    if isinstance(node, (cst.Integer, cst.Float)):
        try:
            return float(node.evaluated_value)
        except (ValueError, OverflowError):
            return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        value = _number(node.expression)
        return -value if value is not None else None
    return None


def _positive_constant(node: cst.BaseExpression) -> bool:
    """`1e-8`, `eps`, `self.eps`, `EPSILON`, `torch.finfo(x.dtype).eps`."""
    number = _number(node)
    if number is not None:
        return number > 0
    name = dotted_name(node)
    if name is None and isinstance(node, cst.Attribute):
        name = node.attr.value
    return name is not None and bool(_EPS_NAME.search(name.rsplit(".", 1)[-1]))


def _arg(call: cst.Call, index: int, keyword: str | None = None) -> cst.BaseExpression | None:
    positional = [a for a in call.args if a.keyword is None and a.star == ""]
    if keyword is not None:
        for a in call.args:
            if a.keyword is not None and a.keyword.value == keyword:
                return a.value
    return positional[index].value if index < len(positional) else None


def _method(call: cst.Call) -> str | None:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def _sum_operand(expr: cst.BaseExpression) -> str:
    """Source of `expr` safe as the left operand of `+`."""
    text = _code(expr)
    if isinstance(expr, (cst.IfExp, cst.Lambda, cst.BooleanOperation, cst.Comparison, cst.UnaryOperation)) \
            and not expr.lpar:
        return f"({text})"
    if isinstance(expr, cst.BinaryOperation) and not expr.lpar and isinstance(
            expr.operator, (cst.BitOr, cst.BitAnd, cst.BitXor, cst.LeftShift, cst.RightShift)):
        return f"({text})"
    return text


def _code(expr: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(expr)


def _atom(expr: cst.BaseExpression) -> str:
    """Source of `expr` safe to put before `.method()`."""
    text = _code(expr)
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or (expr.lpar and expr.rpar):
        return text
    return f"({text})"


class _Modules(FactCollector):
    """`self.softmax = nn.Softmax(dim=1)`, `criterion = nn.BCELoss()`: objects
    whose calls produce probabilities or compute BCE, by the name they are
    bound to (class-qualified for attributes of `self`)."""

    def visit_Assign(self, node: cst.Assign) -> None:
        record_module_binding(self, node, "trn40x.global")
        value = node.value
        if not isinstance(value, cst.Call):
            return
        callee = self.facts.qualify(value.func) or ""
        kind = ("softmax" if callee in _SOFTMAX_MODULES else "sigmoid" if callee in _SIGMOID_MODULES
                else "bce" if callee in _BCE_MODULES else None)
        if kind is None:
            return
        klass = self.walk.klass.name.value if self.walk.klass is not None else ""
        for target in node.targets:
            name = dotted_name(target.target)
            if name is not None:
                self.add("trn40x.module", (klass if name.startswith("self.") else "", name, kind, value))


class _UnsafeMath(Bindings, Rule):
    """Shared reading of values; not a rule itself (no CODE)."""

    Collector = _Modules
    GLOBALS_KIND = "trn40x.global"

    def _module_kind(self, func: cst.BaseExpression) -> tuple[str, cst.Call] | None:
        name = dotted_name(func)
        if name is None:
            return None
        bound = self.lookup(name)
        if isinstance(bound, cst.Call):
            callee = self.facts.qualify(bound.func) or ""
            kind = ("softmax" if callee in _SOFTMAX_MODULES else "sigmoid" if callee in _SIGMOID_MODULES
                    else "bce" if callee in _BCE_MODULES else None)
            return (kind, bound) if kind else None
        if bound is not None:
            return None
        klass = self.walk.klass.name.value if self.walk.klass is not None else ""
        for owner, target, kind, ctor in self.facts.get("trn40x.module"):  # type: ignore[misc]
            if target == name and (owner == "" or owner == klass):
                return kind, ctor
        return None

    def origin(self, expr: cst.BaseExpression, depth: int = 6) -> cst.Call | None:
        """The softmax/sigmoid call a SOFTMAX/SIGMOID value came from."""
        for _ in range(depth):
            if isinstance(expr, (cst.Name, cst.Attribute)):
                resolved = self.resolve(expr, 1)
                if resolved is expr:
                    return None
                expr = resolved
            elif isinstance(expr, cst.Call):
                callee = self.facts.qualify(expr.func) or ""
                method = _method(expr)
                if callee in _SOFTMAXES or callee in _SIGMOIDS or method in ("softmax", "sigmoid") or \
                        self._module_kind(expr.func):
                    return expr
                if method in _PASS_THROUGH and isinstance(expr.func, cst.Attribute):
                    expr = expr.func.value
                else:
                    return None
            elif isinstance(expr, cst.Subscript):
                expr = expr.value
            else:
                return None
        return None

    def classify(self, expr: cst.BaseExpression, depth: int = 6) -> Optional[str]:
        """Why `expr` can be exactly 0, or None when it cannot or we cannot tell."""
        if depth <= 0:
            return None
        if isinstance(expr, (cst.Name, cst.Attribute)):
            name = dotted_name(expr)
            if name is None:
                return None
            bound = self.lookup(name)
            bound_here = isinstance(bound, cst.BaseExpression)
            if bound_here:
                kind = self.classify(bound, depth - 1)
                if kind is not None:
                    return kind
            # an unknown value: what people name probabilities (when it comes
            # from outside) and masks (`mask = batch["attention_mask"]`)
            last = name.rsplit(".", 1)[-1]
            if _PROB_NAME.match(last) and not bound_here:
                return PROB
            if _MASK_NAME.match(last):
                return MASK
            return None
        number = _number(expr)
        if number is not None:
            return SAFE if number > 0 else None
        if isinstance(expr, cst.Subscript):
            inner = self.classify(expr.value, depth - 1)
            return inner if inner in (_PROBABILITIES | {ZERO, MASK, SQUARES}) else None
        if isinstance(expr, cst.Comparison):
            return MASK
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
            return MASK
        if isinstance(expr, cst.BinaryOperation):
            return self._classify_binary(expr, depth)
        if isinstance(expr, cst.Call):
            return self._classify_call(expr, depth)
        return None

    def _classify_binary(self, expr: cst.BinaryOperation, depth: int) -> Optional[str]:
        op = expr.operator
        if isinstance(op, cst.Subtract):
            one = _number(expr.left)
            if one is not None and one == 1.0:
                right = self.classify(expr.right, depth - 1)
                return MASK if right == MASK else ZERO if right in (_PROBABILITIES | {ZERO}) else None
            return None
        if isinstance(op, cst.Power):
            exponent = _number(expr.right)
            return SQUARES if exponent is not None and exponent > 0 and exponent == int(exponent) \
                and int(exponent) % 2 == 0 else None
        left, right = self.classify(expr.left, depth - 1), self.classify(expr.right, depth - 1)
        if isinstance(op, cst.Multiply):
            if dotted_name(expr.left) is not None and dotted_name(expr.left) == dotted_name(expr.right):
                return SQUARES
            left, right = (None if left == SAFE else left), (None if right == SAFE else right)
            if left is None and right is None:
                return None
            if left == right and left in (MASK, SQUARES, SPREAD):
                return left
            if None in (left, right):
                # a scale keeps what the other factor is; a mask or a probability
                # times anything can be exactly 0
                other = left if right is None else right
                return other if other in (SQUARES, SPREAD) else ZERO
            return ZERO
        if isinstance(op, cst.Add):
            # Nonnegative terms that can each be 0 sum to something that can be 0;
            # anything else (an eps, an unknown) makes it safe or unknown.
            if SAFE in (left, right) or _positive_constant(expr.left) or _positive_constant(expr.right):
                return SAFE
            if left is None or right is None:
                return None
            if left == SQUARES and right == SQUARES:
                return SQUARES
            return ZERO
        if isinstance(op, cst.Divide):
            if left in (SQUARES, SPREAD):
                return left
            return ZERO if left not in (None, SAFE) else None
        return None

    def _classify_call(self, call: cst.Call, depth: int) -> Optional[str]:
        callee = self.facts.qualify(call.func) or ""
        method = _method(call)
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        if callee in _SAFE_FUNCTIONS or (method in ("exp", "log_softmax") and receiver is not None):
            return SAFE
        if callee in _SOFTMAXES or (method == "softmax" and receiver is not None and not self._is_module(receiver)):
            return SOFTMAX
        if callee in _SIGMOIDS or (method == "sigmoid" and receiver is not None and not self._is_module(receiver)):
            return SIGMOID
        module = self._module_kind(call.func)
        if module is not None and module[0] in ("softmax", "sigmoid"):
            return SOFTMAX if module[0] == "softmax" else SIGMOID
        if isinstance(call.func, cst.Call):  # nn.Softmax(dim=1)(x)
            inner = self.facts.qualify(call.func.func) or ""
            if inner in _SOFTMAX_MODULES:
                return SOFTMAX
            if inner in _SIGMOID_MODULES:
                return SIGMOID
        if callee in _RELUS or (method in ("relu", "abs", "square") and receiver is not None
                                and not self._is_module(receiver) and not call.args):
            return SQUARES if callee in _MAGNITUDES or method in ("square", "abs") else ZERO
        if callee in ("torch.clamp", "torch.clip") or (method in ("clamp", "clip", "clamp_", "clamp_min")
                                                       and receiver is not None):
            floor = _arg(call, 1 if receiver is None else 0, "min")
            value = _number(floor) if floor is not None else None
            if floor is None:
                return None
            return ZERO if value == 0.0 else SAFE if value is None or value > 0 else None
        if method == "pow" and receiver is not None:
            exponent = _arg(call, 0, "exponent")
            value = _number(exponent) if exponent is not None else None
            return SQUARES if value is not None and value > 0 and value % 2 == 0 else None
        if callee == "torch.pow":
            exponent = _arg(call, 1, "exponent")
            value = _number(exponent) if exponent is not None else None
            return SQUARES if value is not None and value > 0 and value % 2 == 0 else None
        if callee in _SPREADS or (method in ("std", "var", "norm") and receiver is not None
                                  and not self._is_module(receiver)):
            return SPREAD
        if callee in _COUNTS or method in ("count_nonzero", "bincount"):
            return COUNT
        if method in _COMPARE_METHODS and receiver is not None and not self._is_module(receiver):
            return MASK
        if callee in ("torch.ne", "torch.eq", "torch.gt", "torch.lt", "torch.ge", "torch.le", "torch.logical_not",
                      "torch.isfinite"):
            return MASK
        if callee in _SUMS or (method in ("sum", "mean", "nansum") and receiver is not None
                               and not self._is_module(receiver)):
            target = receiver if callee not in _SUMS else _arg(call, 0, "input")
            if target is None:
                return None
            inner = self.classify(target, depth - 1)
            is_mean = method == "mean" or callee.endswith(".mean")
            if inner == MASK:
                return ZERO if is_mean else COUNT
            if inner == SQUARES:
                return SPREAD
            if inner == ZERO:
                return ZERO
            return None
        if method in _PASS_THROUGH and receiver is not None:
            inner = self.classify(receiver, depth - 1)
            return inner
        if callee in ("torch.gather", "torch.index_select", "torch.masked_select"):
            first = _arg(call, 0, "input")
            return self.classify(first, depth - 1) if first is not None else None
        return None

    def one_minus_sigmoid(self, arg: cst.BaseExpression) -> cst.BaseExpression | None:
        """`s` of `1 - s` when `s` is a sigmoid output: log(1 - sigmoid(x)) is logsigmoid(-x)."""
        while isinstance(arg, (cst.Name, cst.Attribute)):
            resolved = self.resolve(arg, 1)
            if resolved is arg:
                return None
            arg = resolved
        if isinstance(arg, cst.BinaryOperation) and isinstance(arg.operator, cst.Subtract) \
                and _number(arg.left) == 1.0 and self.classify(arg.right) == SIGMOID:
            return arg.right
        return None

    def _is_module(self, receiver: cst.BaseExpression) -> bool:
        """`torch.softmax` reached through an attribute is a function, not a method."""
        name = self.facts.qualify(receiver) or ""
        return name.split(".")[0] in ("torch", "numpy", "math", "scipy", "jax")

    # -- the calls we check -------------------------------------------------------------

    def log_argument(self, call: cst.Call) -> tuple[cst.BaseExpression, str] | None:
        """(argument, family) for `torch.log(x)`/`x.log()`/`math.log(x)`/`np.log(x)`;
        family is 'torch', 'method', 'math' or 'numpy'."""
        callee = self.facts.qualify(call.func) or ""
        if callee in _LOGS:
            arg = _arg(call, 0, "input") or _arg(call, 0, "x")
            if arg is None:
                return None
            family = "math" if callee.startswith("math.") else "numpy" if callee.startswith("numpy.") else "torch"
            return arg, family
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("log", "log2", "log10", "log_") \
                and not call.args and not self._is_module(call.func.value):
            return call.func.value, "method"
        return None


def _log_softmax_fix(self: _UnsafeMath, log_call: cst.Call, inner: cst.Call) -> FixSpec | None:
    """`torch.log(torch.softmax(x, 1))` -> `torch.log_softmax(x, 1)`, keeping the prefix
    the user wrote; `x.softmax(-1).log()` -> `x.log_softmax(-1)`;
    `torch.log(torch.sigmoid(x))` -> `F.logsigmoid(x)`."""
    callee = self.facts.qualify(inner.func) or ""
    method = _method(inner)
    parens = {"lpar": log_call.lpar, "rpar": log_call.rpar}
    if callee in _SOFTMAXES:
        if isinstance(inner.func, cst.Attribute):
            new_func: cst.BaseExpression = inner.func.with_changes(attr=cst.Name("log_softmax"))
        else:  # `from torch.nn.functional import softmax`
            prefix = _functional_prefix(self)
            if prefix is None:
                return None
            new_func = cst.parse_expression(f"{prefix}.log_softmax")
        return FixSpec("Use log_softmax", (Replace(log_call, inner.with_changes(func=new_func, **parens)),))
    if callee in _SIGMOIDS:
        if callee == "torch.nn.functional.sigmoid" and isinstance(inner.func, cst.Attribute):
            new_func = inner.func.with_changes(attr=cst.Name("logsigmoid"))
        else:
            prefix = _functional_prefix(self)
            if prefix is None:
                return None
            new_func = cst.parse_expression(f"{prefix}.logsigmoid")
        return FixSpec("Use logsigmoid", (Replace(log_call, inner.with_changes(func=new_func, **parens)),))
    # Tensor methods; `self.softmax(x)` (an nn.Softmax module) has no log_softmax twin.
    if method not in ("softmax", "sigmoid") or not isinstance(inner.func, cst.Attribute):
        return None
    receiver = inner.func.value
    if self._module_kind(inner.func) is not None or dotted_name(receiver) in ("self", "cls"):
        return None
    if method == "softmax":
        new_call = inner.with_changes(func=inner.func.with_changes(attr=cst.Name("log_softmax")), **parens)
        return FixSpec("Use log_softmax", (Replace(log_call, new_call),))
    prefix = _functional_prefix(self)
    if prefix is None:
        return None
    return FixSpec("Use logsigmoid", (Replace(log_call, f"{prefix}.logsigmoid({_code(receiver)})"),))


def _sigmoid_input(self: _UnsafeMath, call: cst.BaseExpression) -> cst.BaseExpression | None:
    """`x` of `torch.sigmoid(x)` / `F.sigmoid(x)` / `x.sigmoid()`."""
    if not isinstance(call, cst.Call):
        return None
    if (self.facts.qualify(call.func) or "") in _SIGMOIDS:
        return _arg(call, 0, "input")
    if _method(call) == "sigmoid" and not call.args and isinstance(call.func, cst.Attribute) \
            and dotted_name(call.func.value) not in ("self", "cls"):
        return call.func.value
    return None


def _functional_prefix(self: _UnsafeMath) -> str | None:
    """How this file spells `torch.nn.functional` (F, nnf, torch.nn.functional)."""
    for local, full in self.facts.aliases:
        if full == "torch.nn.functional" and not local.startswith("="):
            return local
    for local, full in self.facts.aliases:
        if full == "torch" and not local.startswith("="):
            return f"{local}.nn.functional"
    return None


class LogOfSoftmax(_UnsafeMath):
    """TRN402: log of softmax/sigmoid outputs, and BCELoss on sigmoid outputs."""

    CODE = "TRN402"

    def visit_Call(self, node: cst.Call) -> None:
        found = self.log_argument(node)
        if found is not None:
            arg, family = found
            if family in ("math", "numpy"):
                return
            kind = self.classify(arg)
            if kind in (SOFTMAX, SIGMOID):
                self._report_log(node, arg, kind, family)
            elif self.one_minus_sigmoid(arg) is not None:
                self._report_log_one_minus(node, arg)
            return
        self._check_bce(node)

    def _report_log(self, node: cst.Call, arg: cst.BaseExpression, kind: str, family: str) -> None:
        stable = "log_softmax" if kind == SOFTMAX else "logsigmoid"
        source = "softmax" if kind == SOFTMAX else "sigmoid"
        origin = self.origin(arg)
        message = (f"`log` of a {source} output: probabilities that underflow to 0 give -inf and NaN "
                   f"gradients; `{stable}` computes the same values stably")
        fix = None
        if isinstance(arg, cst.Call) and origin is arg:
            fix = _log_softmax_fix(self, node, arg)
        elif origin is not None and self.resolve(arg) is origin:
            # `probs = softmax(x)` ... `log(probs)`: recomputing from `x` is right
            # only if `x` was not rebound in between, so the fix is offered, not applied
            offered = _log_softmax_fix(self, node, origin)
            if offered is not None:
                fix = FixSpec(offered.title + " on the logits", offered.changes, safe=False)
        related = [Related(origin, f"the {source} whose output is logged")] if origin is not None and origin is not arg \
            else []
        self.report(node, message, fix=fix, related=related)

    def _report_log_one_minus(self, node: cst.Call, arg: cst.BaseExpression) -> None:
        sigmoid = self.one_minus_sigmoid(arg)
        message = ("`log(1 - sigmoid(x))`: `1 - sigmoid(x)` rounds to exactly 0 for large `x`, giving -inf and NaN "
                   "gradients; `logsigmoid(-x)` computes the same value stably")
        fix = None
        inner = _sigmoid_input(self, sigmoid) if sigmoid is not None else None
        prefix = _functional_prefix(self)
        direct = isinstance(arg, cst.BinaryOperation) and arg.right is sigmoid
        if direct and inner is not None and prefix is not None:
            negated = f"-{_code(inner)}" if isinstance(inner, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) \
                else f"-({_code(inner)})"
            fix = FixSpec("Use logsigmoid(-x)", (Replace(node, f"{prefix}.logsigmoid({negated})"),))
        related = [Related(sigmoid, "the sigmoid output")] if sigmoid is not None and not direct else []
        self.report(node, message, fix=fix, related=related)

    def _check_bce(self, node: cst.Call) -> None:
        callee = self.facts.qualify(node.func) or ""
        ctor: cst.Call | None = None
        inline_ctor = isinstance(node.func, cst.Call) and (self.facts.qualify(node.func.func) or "") in _BCE_MODULES
        if callee in _BINARY_BCE:
            pass
        elif inline_ctor:
            ctor = node.func  # type: ignore[assignment]
        else:
            module = self._module_kind(node.func)
            if module is None or module[0] != "bce":
                return
            ctor = module[1]
        first = _arg(node, 0, "input")
        if first is None or self.classify(first) != SIGMOID:
            return
        origin = self.origin(first)
        message = ("`BCELoss` on `sigmoid` outputs: probabilities saturate to exactly 0 or 1 in float32, the log "
                   "is clamped and gradients vanish or turn NaN; `BCEWithLogitsLoss` on the logits is the stable form")
        fix = None
        logits = _sigmoid_input(self, first) if origin is first else None
        if logits is not None:
            if callee in _BINARY_BCE:
                fix = FixSpec("Use binary_cross_entropy_with_logits on the logits",
                              (Replace(node.func, _code(node.func) + "_with_logits"), Replace(first, _code(logits))))
            elif ctor is not None and _code(ctor.func).endswith("BCELoss"):
                new_func = _code(ctor.func)[: -len("BCELoss")] + "BCEWithLogitsLoss"
                # An inline `nn.BCELoss()(...)` changes only here; a shared
                # criterion may also be called on real probabilities elsewhere.
                fix = FixSpec("Use BCEWithLogitsLoss on the logits",
                              (Replace(ctor.func, new_func), Replace(first, _code(logits))), safe=inline_ctor)
        related = [Related(origin, "the sigmoid output passed to BCE")] if origin is not None and origin is not first \
            else []
        self.report(node, message, fix=fix, related=related)

    VALID = [
        "import torch.nn.functional as F\nlogp = F.log_softmax(logits, dim=-1)\n",
        "import torch\nlogp = torch.log_softmax(logits, dim=1)\n",
        "import torch.nn.functional as F\nls = F.logsigmoid(x)\n",
        "import torch\nimport torch.nn as nn\ncrit = nn.BCEWithLogitsLoss()\nloss = crit(logits, y)\n",
        "import torch.nn.functional as F\nloss = F.binary_cross_entropy_with_logits(logits, y)\n",
        # an epsilon is the user's choice; TRN401 does not fire either
        "import torch\np = torch.softmax(x, -1)\nent = -(p * torch.log(p + 1e-8)).sum(-1)\n",
        "import torch\nimport torch.nn as nn\nloss = nn.BCELoss()(model(x), y)  # model ends in its own layer\n",
        "import torch\nimport math\nlogit = math.log(p / (1 - p))\n",
        "import torch\ndef f(self, x):\n    p = torch.softmax(x, -1)\n    p = p.clamp(min=1e-6)\n    return torch.log(p)\n",
        "import torch\nimport torch.nn.functional as F\nloss = F.binary_cross_entropy(torch.sigmoid(x).clamp(1e-6, 1-1e-6), y)\n",
        "import torch\nself.log('train/loss', torch.softmax(x, -1).mean())\n",
    ]
    INVALID = [
        Invalid("import torch\nlogp = torch.log(torch.softmax(x, dim=1))\n", line=2,
                fixed="import torch\nlogp = torch.log_softmax(x, dim=1)\n"),
        Invalid("import torch.nn.functional as F\nlogp = F.softmax(x, -1).log()\n", line=2,
                fixed="import torch.nn.functional as F\nlogp = F.log_softmax(x, -1)\n"),
        Invalid("import torch\nimport torch.nn.functional as F\nlogp = torch.log(F.softmax(out, dim=-1))\n", line=3,
                fixed="import torch\nimport torch.nn.functional as F\nlogp = F.log_softmax(out, dim=-1)\n"),
        Invalid("import torch\nimport torch.nn.functional as F\nls = torch.log(torch.sigmoid(x))\n", line=3,
                fixed="import torch\nimport torch.nn.functional as F\nls = F.logsigmoid(x)\n"),
        Invalid("import torch\nlp = x.softmax(dim=-1).log()\n", line=2,
                fixed="import torch\nlp = x.log_softmax(dim=-1)\n"),
        Invalid("import torch\ndef loss_fn(logits, y):\n    probs = torch.softmax(logits, dim=-1)\n"
                "    return -torch.log(probs.gather(1, y[:, None])).mean()\n", line=4),
        Invalid("import torch\nfrom torch import log\nimport torch.nn.functional as F\n"
                "class M:\n    def forward(self, x):\n        p = F.sigmoid(x)\n        return log(p)\n", line=7),
        Invalid("import torch\nimport torch.nn.functional as F\nneg = torch.log(1 - torch.sigmoid(d(fake)))\n", line=3,
                fixed="import torch\nimport torch.nn.functional as F\nneg = F.logsigmoid(-d(fake))\n"),
        Invalid("import torch\nimport torch.nn.functional as F\nloss = F.binary_cross_entropy(torch.sigmoid(z), y)\n",
                line=3, fixed="import torch\nimport torch.nn.functional as F\n"
                "loss = F.binary_cross_entropy_with_logits(z, y)\n"),
        Invalid("import torch\nimport torch.nn as nn\nclass Trainer:\n    def __init__(self):\n"
                "        self.criterion = nn.BCELoss()\n    def step(self, logits, y):\n"
                "        return self.criterion(torch.sigmoid(logits), y)\n", line=7),
        Invalid("import torch\nimport torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n"
                "        super().__init__()\n        self.softmax = nn.Softmax(dim=1)\n"
                "    def forward(self, x):\n        return torch.log(self.softmax(x))\n", line=8),
    ]


class UnsafeLog(_UnsafeMath):
    """TRN401: log/sqrt/division of values that can be exactly 0."""

    CODE = "TRN401"

    def visit_Call(self, node: cst.Call) -> None:
        found = self.log_argument(node)
        if found is not None:
            self._check_log(node, *found)
            return
        self._check_sqrt(node)

    def _check_log(self, node: cst.Call, arg: cst.BaseExpression, family: str) -> None:
        kind = self.classify(arg)
        if family in ("math", "numpy") and kind in (SOFTMAX, SIGMOID):
            kind = PROB  # Python/NumPy values have no log_softmax twin: TRN402 does not apply
        elif family not in ("math", "numpy") and self.one_minus_sigmoid(arg) is not None:
            return  # TRN402: logsigmoid(-x)
        if kind not in (PROB, ZERO, COUNT, SPREAD):
            # masks are logged on purpose (-inf attention biases); softmax and
            # sigmoid outputs are TRN402's, one finding per problem; a bare
            # square is usually of something positive (sigma ** 2)
            return
        what = {PROB: "a probability", ZERO: "a value that can be exactly 0", COUNT: "a count",
                SQUARES: "a square", SPREAD: "a spread (std/var/norm) that can be 0"}.get(kind, "a value")
        name = _code(arg)
        if len(name) > 40:
            name = name[:37] + "..."
        message = f"`log({name})`: {what}; at 0 the log is -inf and its gradient inf, turning the loss NaN"
        if family == "math":
            new_arg = f"max({_code(arg)}, {_EPSILON})"
            fix = FixSpec("Clamp the argument to a tiny positive minimum", (Replace(arg, new_arg),))
        elif family == "numpy":
            fix = FixSpec("Add a tiny epsilon", (Replace(arg, f"{_sum_operand(arg)} + {_EPSILON}"),))
        else:
            fix = FixSpec("Clamp the argument to a tiny positive minimum",
                          (Replace(arg, f"{_atom(arg)}.clamp_min({_EPSILON})"),))
        self.report(node, message, fix=fix)

    def _check_sqrt(self, node: cst.Call) -> None:
        if self.walk.in_no_grad:
            return  # sqrt(0) is 0; only its gradient is the problem
        callee = self.facts.qualify(node.func) or ""
        if callee in _SQRTS:
            arg = _arg(node, 0, "input")
            method = False
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in ("sqrt", "rsqrt") and not node.args \
                and not self._is_module(node.func.value):
            arg = node.func.value
            method = True
        else:
            return
        if arg is None:
            return
        kind = self.classify(arg)
        if kind not in (SPREAD, SQUARES, ZERO, COUNT, PROB, SOFTMAX, SIGMOID):
            return
        name = _code(arg)
        if len(name) > 40:
            name = name[:37] + "..."
        message = (f"`sqrt({name})` of a value that can be exactly 0: the gradient of sqrt at 0 is inf, "
                   f"so backward produces inf/NaN")
        new = f"{_sum_operand(arg)} + {_EPSILON}"
        if method:
            new = f"({new})"
        fix = FixSpec("Add a tiny epsilon under the square root", (Replace(arg, new),))
        self.report(node, message, fix=fix)

    # -- division ----------------------------------------------------------------------

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Divide):
            self._check_division(node, node.right)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.DivideAssign):
            self._check_division(node, node.value)

    def _check_division(self, node: cst.CSTNode, denominator: cst.BaseExpression) -> None:
        kind = self.classify(denominator)
        if kind not in (COUNT, SPREAD):
            return
        if kind == SPREAD and self._is_sqrt(denominator):
            return
        name = _code(denominator)
        if len(name) > 40:
            name = name[:37] + "..."
        if kind == COUNT:
            message = (f"division by `{name}`, a count that is 0 when nothing is selected (an empty mask, a batch "
                       f"of padding): the result is NaN and so is every gradient")
            if name.endswith(".item()") or (self.facts.qualify(denominator.func) or "").startswith("numpy.") \
                    if isinstance(denominator, cst.Call) else False:
                new = f"max({_code(denominator)}, 1)"
            else:
                new = f"{_atom(denominator)}.clamp_min(1)"
            title = "Count at least 1"
        else:
            message = (f"division by `{name}`, which is 0 for constant or all-zero inputs: the result is inf/NaN "
                       f"and so is every gradient")
            bare = denominator.with_changes(lpar=[], rpar=[]) if denominator.lpar else denominator
            new = f"({_code(bare)} + {_EPSILON})"
            title = "Add a tiny epsilon to the denominator"
        fix = FixSpec(title, (Replace(denominator, new),))
        self.report(node, message, fix=fix)

    def _is_sqrt(self, expr: cst.BaseExpression) -> bool:
        expr = self.resolve(expr)
        if not isinstance(expr, cst.Call):
            return False
        return (self.facts.qualify(expr.func) or "") in _SQRTS or _method(expr) == "sqrt"

    VALID = [
        # positional encodings: logs of constants
        "import math\nimport torch\ndiv = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))\n",
        "import numpy as np\nimport torch\nscale = np.log(10000.0) / half\nppl = math.log(vocab_size)\n",
        "import torch\nlp = torch.log(torch.tensor(2.0))\nz = torch.log(torch.exp(x))\n",
        "import torch\ndef ent(logits):\n    p = torch.softmax(logits, -1)\n"
        "    return -(p * torch.log(p.clamp_min(1e-12))).sum(-1)\n",
        "import torch\ndef f(probs, eps=1e-8):\n    return torch.log(probs + eps) + torch.log1p(-probs)\n",
        "import torch\ndef f(self, p):\n    return torch.log(torch.clamp(p, min=self.eps))\n",
        "import torch\nimport torch.nn.functional as F\nz = F.normalize(x, dim=-1)\n"
        "y = x / x.norm(dim=-1, keepdim=True).clamp(min=1e-6)\n",
        "import torch\nimport math\nattn = q @ k.transpose(-2, -1) / math.sqrt(d_k)\n"
        "loss = total / len(loader)\nacc = correct / x.size(0)\nz = logits / self.temperature\n",
        "import torch\nstd = torch.sqrt(var + 1e-5)\nadv = (adv - adv.mean()) / (adv.std() + 1e-8)\n",
        "import torch\ndef pool(h, mask):\n    return (h * mask).sum(1) / mask.sum(1).clamp(min=1e-9)\n",
        "import torch\nbias = torch.log(attention_mask.float())  # -inf bias on purpose\n",
        "import torch\nwith torch.no_grad():\n    rms = torch.sqrt((x ** 2).mean())\n",
        "import torch\nlog_probs = F.log_softmax(x, -1)\nnll = -torch.log(log_probs.exp())\n",
        "import torch\nself.log('val_loss', loss)\nlogger.log(probs)\n",
        "import torch\nx = torch.log(model(x))\ny = torch.sqrt(a)\nz = a / b.sum()\n",
        "import torch\ndef g(std, weights):\n    return x / std + y / weights.sum()\n",
        "import torch\nlog_prob = torch.log(torch.softmax(x, 1) + 1e-10)\n",
    ]
    INVALID = [
        Invalid("import torch\ndef focal(logits, t):\n    p = torch.sigmoid(logits)\n"
                "    pt = p * t + (1 - p) * (1 - t)\n    return -torch.log(pt).mean()\n", line=5,
                fixed="import torch\ndef focal(logits, t):\n    p = torch.sigmoid(logits)\n"
                "    pt = p * t + (1 - p) * (1 - t)\n    return -torch.log(pt.clamp_min(1e-12)).mean()\n"),
        Invalid("import torch\ndef bce(probs, y):\n"
                "    return -(y * torch.log(probs) + (1 - y) * torch.log(1 - probs)).mean()\n", line=3,
                fixed="import torch\ndef bce(probs, y):\n"
                "    return -(y * torch.log(probs.clamp_min(1e-12)) + (1 - y) * torch.log((1 - probs).clamp_min(1e-12)))"
                ".mean()\n"),
        Invalid("import torch\ndef entropy(probs):\n    return -(probs * probs.log()).sum(-1)\n", line=3,
                fixed="import torch\ndef entropy(probs):\n    return -(probs * probs.clamp_min(1e-12).log()).sum(-1)\n"),
        Invalid("import torch\nfrom torch import log\nh = torch.relu(x)\ny = log(h)\n", line=4,
                fixed="import torch\nfrom torch import log\nh = torch.relu(x)\ny = log(h.clamp_min(1e-12))\n"),
        Invalid("import torch\ndef dist(a, b):\n    return torch.sqrt(((a - b) ** 2).sum(-1))\n", line=3,
                fixed="import torch\ndef dist(a, b):\n    return torch.sqrt(((a - b) ** 2).sum(-1) + 1e-12)\n"),
        Invalid("import torch\ndef layer_norm(x):\n    var = x.var(-1, keepdim=True)\n"
                "    return (x - x.mean(-1, keepdim=True)) / var.sqrt()\n", line=4,
                fixed="import torch\ndef layer_norm(x):\n    var = x.var(-1, keepdim=True)\n"
                "    return (x - x.mean(-1, keepdim=True)) / (var + 1e-12).sqrt()\n"),
        Invalid("import torch\ndef masked_mean(loss, mask):\n    return (loss * mask).sum() / mask.sum()\n", line=3,
                fixed="import torch\ndef masked_mean(loss, mask):\n"
                "    return (loss * mask).sum() / mask.sum().clamp_min(1)\n"),
        Invalid("import torch\ndef token_loss(loss, labels):\n    valid = (labels != -100).float()\n"
                "    n = valid.sum()\n    return (loss * valid).sum() / n\n", line=5,
                fixed="import torch\ndef token_loss(loss, labels):\n    valid = (labels != -100).float()\n"
                "    n = valid.sum()\n    return (loss * valid).sum() / n.clamp_min(1)\n"),
        Invalid("import torch\nadv = (adv - adv.mean()) / adv.std()\n", line=2,
                fixed="import torch\nadv = (adv - adv.mean()) / (adv.std() + 1e-12)\n"),
        Invalid("import torch\nclass Proj(torch.nn.Module):\n    def forward(self, x):\n"
                "        return x / torch.norm(x, dim=-1, keepdim=True)\n", line=4),
        Invalid("import math\nimport torch\ndef nll(p):\n    q = torch.softmax(p, 0)\n"
                "    return -math.log(1 - q[0].item())\n", line=5),
        Invalid("import numpy as np\nimport torch\ndef kl(counts, q):\n    p = counts / counts.sum()\n"
                "    return (p * np.log(np.bincount(counts))).sum()\n", line=5,
                fixed="import numpy as np\nimport torch\ndef kl(counts, q):\n    p = counts / counts.sum()\n"
                "    return (p * np.log(np.bincount(counts) + 1e-12)).sum()\n"),
    ]
