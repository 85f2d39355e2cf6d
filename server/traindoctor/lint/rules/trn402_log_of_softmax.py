"""TRN402 log-of-softmax: `log` of softmax/sigmoid outputs, where `log_softmax`
and `logsigmoid` are the stable forms (BCE on sigmoid outputs is TRN407). Probabilities are the model's `prob` fact: from functions and
Tensor methods, from modules (`nn.Softmax`, an `nn.Sequential` ending in
`nn.Sigmoid`, a model whose forward returns one, also as a tuple item and from another
file), from functions that return one, from every caller of a function or a module's
forward, from a dict item the function stored, and written by hand (`e / e.sum(dim)` of an
exp, `1 / (1 + exp(-z))`); `log(1 - p)` of any such sigmoid. Not reported: the probability picked at an index that the
program draws from the same function's output (`Categorical(probs).sample()`), which is
never exactly 0 (analysis/sampling.py). A rewrite is offered where the softmax/sigmoid
call is right there; it computes the same value, stably: safe."""

from __future__ import annotations

import libcst as cst

from ..analysis.sampling import probability_of_drawn_index
from ..analysis.scopes import code
from ..analysis.values import arg
from ..analysis.vocab import vocab
from ..walk import iter_nodes
from ..rule import FixSpec, Related, Replace, Rule

_STABLE = {"softmax": "log_softmax", "sigmoid": "logsigmoid"}


class LogOfSoftmax(Rule):
    CODE = "TRN402"
    READS = ("names", "objects", "classes", "functions", "calls", "globals", "program")  # program: index draws

    def visit_Call(self, node: cst.Call) -> None:
        if not self.gradient_flows():
            return  # no gradient, no NaN gradient to prevent
        v = vocab()
        qualified = self.names.qualify(node.func) or ""
        method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
        if qualified in v.logs and qualified.startswith("torch."):
            target = arg(node, 0, "input")
        elif method == "log" and not node.args and not qualified.startswith(("math.", "numpy.", "torch.")):
            target = node.func.value
        else:
            return
        if target is None:
            return
        one_minus = self._one_minus_sigmoid(target)
        if one_minus is not None:
            message = (f"`log(1 - sigmoid(...))` is -inf once the sigmoid saturates at 1 (in float32 from logits "
                       f"of about {v.fp32_sigmoid_saturation_logit:g} on); `logsigmoid(-x)` computes the same value "
                       f"stably")
            origin = self.values(one_minus).origin
            related = [Related(origin, "the sigmoid output comes from here")] \
                if origin is not None and origin is not one_minus else []
            fix = self._rewrite(node, one_minus, "logsigmoid", negate=True) if isinstance(one_minus, cst.Call) \
                else None
            self.report(node, message, fix=fix, related=related)
            return
        value = self.values(target)
        if value.prob not in ("softmax", "sigmoid") or self._computed_without_grad(value.origin):
            return
        klass = self.walk.klass.name.value if self.walk.klass is not None else ""
        if value.prob == "softmax" and probability_of_drawn_index(target, self.walk.function, klass, self.model):
            return  # the probability of an index the program drew from these probabilities: never 0
        stable = _STABLE[value.prob]
        where = (f"a logit about {v.fp32_softmax_underflow_gap} below the largest" if value.prob == "softmax"
                 else f"logits below about {v.fp32_sigmoid_underflow_logit:g}")
        message = (f"`log` of {value.prob} output: probabilities underflow to exactly 0 (in float32 for {where}), so "
                   f"the log is -inf and gradients NaN; `{stable}` computes the same value stably")
        related = [Related(value.origin, f"the {value.prob} output comes from here")] \
            if value.origin is not None and value.origin is not target else []
        fix = self._rewrite(node, target, stable) if isinstance(target, cst.Call) else None
        self.report(node, message, fix=fix, related=related)

    def _computed_without_grad(self, origin: cst.CSTNode | None) -> bool:
        """The softmax/sigmoid here takes values bound under no_grad (a teacher's logits in
        distillation): no gradient flows through its log, so none can turn NaN."""
        if not isinstance(origin, cst.Call) or not origin.args:
            return False
        scope, at = self.scope(), self.walk.order
        names = [n.value for n in iter_nodes(origin.args[0].value) if isinstance(n, cst.Name)]
        if not any(scope.bound_without_grad(name, at) for name in names):
            return False
        return not any(self.values(cst.Name(name)).grad in ("known", "likely") for name in names
                       if not scope.bound_without_grad(name, at))

    def _one_minus_sigmoid(self, target: cst.BaseExpression) -> cst.BaseExpression | None:
        """`p` of `1 - p` where `p` is a sigmoid output: computed right there (`1 - D(x)`) or bound
        earlier, passed in by every caller, stored in a dict item (`1 - pred`)."""
        if isinstance(target, cst.BinaryOperation) and isinstance(target.operator, cst.Subtract) and \
                isinstance(target.left, (cst.Integer, cst.Float)) and float(target.left.value) == 1.0:
            inner = target.right
            value = self.values(inner)
            if value.prob == "sigmoid" and not self._computed_without_grad(value.origin):
                return inner
        return None

    def _rewrite(self, node: cst.Call, prob_call: cst.Call, stable: str, negate: bool = False) -> FixSpec | None:
        """`torch.log(F.softmax(x, d))` -> `F.log_softmax(x, d)`; `p.softmax(d).log()` -> `p.log_softmax(d)`."""
        qualified = self.names.qualify(prob_call.func) or ""
        v = vocab()
        func = prob_call.func
        if isinstance(func, cst.Attribute) and qualified not in v.softmax and qualified not in v.sigmoid:
            if func.attr.value != "softmax":
                return None  # p.gather(1, y) of a softmax: not a call to rewrite
            if negate or stable == "logsigmoid":
                return None  # Tensor has no .logsigmoid()
            new = f"{code(func.value)}.{stable}({', '.join(code(a) for a in prob_call.args)})"
        elif qualified in v.softmax or qualified in v.sigmoid:
            functional = self.names.alias_of("torch.nn.functional") or next(
                (local for local, full in self.names.imports.items() if full == "torch.nn.functional"), None)
            if stable == "log_softmax" and qualified.startswith("torch.nn.functional"):
                prefix = code(func).rsplit(".", 1)[0]
            elif functional is not None:
                prefix = functional
            elif stable == "log_softmax" and self.names.alias_of("torch"):
                prefix = self.names.alias_of("torch")
            else:
                return None
            args = [code(a.value) if a.keyword is None else code(a).rstrip(", ") for a in prob_call.args]
            if negate:
                if not prob_call.args:
                    return None
                first = prob_call.args[0].value
                args[0] = f"-{code(first)}" if isinstance(first, (cst.Name, cst.Attribute, cst.Call,
                                                                  cst.Subscript)) else f"-({code(first)})"
            new = f"{prefix}.{stable}({', '.join(a.rstrip(',').strip() for a in args)})"
        else:
            return None
        return FixSpec(f"Use {stable}", (Replace(node, new),))
