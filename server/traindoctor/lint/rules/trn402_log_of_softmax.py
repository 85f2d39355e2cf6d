"""TRN402 log-of-softmax: `log` of softmax/sigmoid outputs, where `log_softmax`
and `logsigmoid` are the stable forms (BCE on sigmoid outputs is TRN407). Probabilities are the model's `prob` fact: from functions and
Tensor methods, from modules (`nn.Softmax`, an `nn.Sequential` ending in
`nn.Sigmoid`, a model whose forward returns one, also as a tuple item and from another
file), from functions that return one, from every caller of a function or a module's
forward, from a dict item the function stored, and written by hand (`e / e.sum(dim)` of an
exp, `1 / (1 + exp(-z))`); `log(1 - p)` of any such sigmoid. Not reported: the probability picked at an index that the
program draws from the same function's output (`Categorical(probs).sample()`), which is
never exactly 0 (analysis/sampling.py); nor a log bound to a name that every path rebinds before any
read; nor a log whose operand carries no gradient (detached,
bound under no_grad, from NumPy): its value may be -inf, but no gradient, so none NaN. A rewrite is offered where the softmax/sigmoid
call is right there; it computes the same value, stably: safe."""

from __future__ import annotations

import libcst as cst

from ..analysis.gradient_use import value_unused
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
        if target is None or value_unused(self.walk.stack):
            return  # a log nobody reads (rebound on every path first) turns nothing NaN
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
        if value.prob not in ("softmax", "sigmoid") or self._computed_without_grad(value.origin) or \
                (self._carries_no_gradient(target) and self._minus_inf_stays_out_of_backward(node)):
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

    def _carries_no_gradient(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """The log's operand has no autograd history: `p.detach()`, `p.data`, `torch.from_numpy(a)`,
        an index or a shape/dtype/device change of one, or a name whose every binding in this
        function is one of those or was made under no_grad. The log's value can still be -inf, but
        no gradient flows through it, and a NaN gradient is what this rule claims (mode nan-gradient)."""
        if depth > 4:
            return False
        if isinstance(expr, cst.Subscript):
            return self._carries_no_gradient(expr.value, depth + 1)
        if isinstance(expr, cst.Attribute):
            return expr.attr.value == "data"
        if isinstance(expr, cst.Call):
            qualified = self.names.qualify(expr.func) or ""
            if qualified == "torch.from_numpy":
                return True
            if isinstance(expr.func, cst.Attribute) and not qualified.startswith(("torch.", "numpy.", "math.")):
                method = expr.func.attr.value
                if method == "detach":
                    return True
                if method in vocab().pass_through_methods:
                    return self._carries_no_gradient(expr.func.value, depth + 1)
            return False
        if isinstance(expr, cst.Name):
            bindings = self.scope().defs.get(expr.value, [])
            return bool(bindings) and all(
                b.grad_off or (b.how == "assign" and b.index is None and b.value is not None
                               and self._carries_no_gradient(b.value, depth + 1)) for b in bindings)
        return False

    def _minus_inf_stays_out_of_backward(self, node: cst.CSTNode) -> bool:
        """The log's -inf can still poison a gradient as a coefficient: the backward of `a * b`
        multiplies by the value of the other factor (`q * log(p.detach())` gives q the gradient
        -inf, and softmax's backward turns it into NaN). Sums and differences never read their
        operands' values. So the log's value must reach its statement only through `+`, `-` and
        factors that carry no gradient either (and `.sum()`/`.mean()`), and end returned or bound to a name that is never
        a factor beside a tensor that may carry a gradient, nor handed to a call."""
        stack = self.walk.stack
        at = next((i for i, n in enumerate(stack) if n is node), None)
        if at is None:  # `1 - p` inside the log: start from the log call, the current node
            at = len(stack) - 1 if stack and isinstance(stack[-1], cst.Call) else None
        if at is None:
            return False
        child = stack[at]
        for parent in reversed(stack[:at]):
            if isinstance(parent, cst.BinaryOperation):
                if isinstance(parent.operator, (cst.Multiply, cst.Divide, cst.MatrixMultiply, cst.Power)):
                    other = parent.right if parent.left is child else parent.left
                    if not self._carries_no_gradient(other):
                        return False
                elif not isinstance(parent.operator, (cst.Add, cst.Subtract)):
                    return False
            elif isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Minus):
                pass
            elif isinstance(parent, cst.Attribute) and parent.value is child and parent.attr.value in ("sum", "mean"):
                pass  # a reduction is a sum: its backward does not read the values
            elif isinstance(parent, cst.Call) and parent.func is child and isinstance(child, cst.Attribute):
                pass
            elif isinstance(parent, cst.Return):
                return True
            elif isinstance(parent, cst.Assign):
                if len(parent.targets) != 1 or not isinstance(parent.targets[0].target, cst.Name):
                    return False
                return self._name_stays_out_of_backward(parent.targets[0].target.value)
            else:
                return False
            child = parent
        return False

    def _name_stays_out_of_backward(self, name: str) -> bool:
        for node in iter_nodes(self.walk.function or self.walk.stack[0]):
            if isinstance(node, cst.BinaryOperation) and \
                    isinstance(node.operator, (cst.Multiply, cst.Divide, cst.MatrixMultiply, cst.Power)):
                for side, other in ((node.left, node.right), (node.right, node.left)):
                    if any(isinstance(n, cst.Name) and n.value == name for n in iter_nodes(side)) and \
                            not self._carries_no_gradient(other):
                        return False
            elif isinstance(node, cst.Arg) and any(isinstance(n, cst.Name) and n.value == name
                                                   for n in iter_nodes(node.value)):
                return False
        return True

    def _one_minus_sigmoid(self, target: cst.BaseExpression) -> cst.BaseExpression | None:
        """`p` of `1 - p` where `p` is a sigmoid output: computed right there (`1 - D(x)`) or bound
        earlier, passed in by every caller, stored in a dict item (`1 - pred`)."""
        if isinstance(target, cst.BinaryOperation) and isinstance(target.operator, cst.Subtract) and \
                isinstance(target.left, (cst.Integer, cst.Float)) and float(target.left.value) == 1.0:
            inner = target.right
            value = self.values(inner)
            if value.prob == "sigmoid" and not self._computed_without_grad(value.origin) and \
                    not (self._carries_no_gradient(inner) and self._minus_inf_stays_out_of_backward(inner)):
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
