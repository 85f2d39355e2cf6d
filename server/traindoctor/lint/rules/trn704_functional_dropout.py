"""TRN704 functional-dropout-always-on: `F.dropout(x, p)` in a model's forward
(or a method forward calls) without `training=`. F.dropout defaults to
training=True, so dropout stays on after `model.eval()` (noisy, worse eval and
inference); F.alpha_dropout defaults to False, so it never runs at all;
`F.scaled_dot_product_attention(..., dropout_p=p)` drops out in every mode. Passing
`training=self.training` ties it to the module's mode, which is what nn.Dropout
does: safe (the call is inside a method of an nn.Module, which has `.training`).
Dropout written by hand (analysis/hand_dropout.py) that reads no training flag is reported
too: at its draw in a model's own method, at the call of such a function of this file."""

from __future__ import annotations

import libcst as cst

from ..analysis.hand_dropout import dropout_draw, is_mask_draw, reads_training
from ..analysis.scopes import code
from ..analysis.model import lineage_members, reachable_methods
from ..analysis.names import arg
from ..analysis.vocab import vocab
from ..fixes import append_kwargs
from ..rule import FixSpec, Replace, Rule


class FunctionalDropoutAlwaysOn(Rule):
    CODE = "TRN704"
    READS = ("names", "classes", "functions", "seeding")

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.names.qualify(node.func) or ""
        if qualified in vocab().attention_dropout:
            self._attention(node, qualified)
            return
        table = vocab().functional_dropout
        if qualified not in table:
            self._hand_written(node)
            return
        if any(a.star for a in node.args):
            return
        if any(a.keyword is not None and a.keyword.value == "training" for a in node.args) or \
                sum(1 for a in node.args if a.keyword is None) >= 3:
            return  # training given (self.training, True for MC dropout, a flag)
        in_model = self._in_model()
        if in_model is None:
            return
        self_name = in_model[1]
        name = code(node.func)
        if table[qualified]:
            message = (f"`{name}` defaults to training=True: dropout stays on after `model.eval()`, so evaluation "
                       f"and inference are noisy; pass `training={self_name}.training` (or use nn.Dropout)")
        else:
            message = (f"`{name}` defaults to training=False: this dropout never runs, not even in training; "
                       f"pass `training={self_name}.training` (or use nn.AlphaDropout)")
        fix = FixSpec(f"Pass training={self_name}.training",
                      (append_kwargs(node, [("training", f"{self_name}.training")]),))
        self.report(node, message, fix=fix)

    def _attention(self, node: cst.Call, qualified: str) -> None:
        """`F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop.p)` drops out in eval too."""
        dropout = arg(node, vocab().attention_dropout[qualified], "dropout_p")
        if dropout is None or any(a.star for a in node.args) or "training" in code(dropout):
            return
        if isinstance(dropout, (cst.Integer, cst.Float)) and float(dropout.evaluated_value) == 0.0:
            return
        in_model = self._in_model()
        if in_model is None:
            return
        self_name = in_model[1]
        text = code(dropout)
        message = (f"`{code(node.func)}` applies `dropout_p={text}` whatever the module's mode: attention "
                   f"weights are dropped after `model.eval()` too, so evaluation and inference are noisy; pass "
                   f"`dropout_p={text} if {self_name}.training else 0.0`")
        fix = FixSpec("Drop out only in training mode",
                      (Replace(dropout, f"({text} if {self_name}.training else 0.0)"),))
        self.report(node, message, fix=fix)

    def _hand_written(self, node: cst.Call) -> None:
        """Dropout written by hand (analysis/hand_dropout.py) that reads no training flag, run by a
        model: in a method forward reaches (reported at its random draw), or a function of this file
        called from one (reported at the call, with an unsafe fix that calls it in training only)."""
        callee = self.model.function(node.func.value) if type(node.func) is cst.Name else None
        if callee is None and not is_mask_draw(node, self.names.qualify):
            return  # most calls: neither a function of this file nor a draw, nothing below is read
        in_model = self._in_model()
        if in_model is None:
            return
        method, self_name = in_model
        if callee is not None and callee.node is not None and not callee.klass and node.args and \
                not any("training" in code(a.value) for a in node.args):
            function = callee.node
            if not isinstance(function, cst.FunctionDef) or self._hand_draw(function) is None:
                return
            name, dropped = code(node.func), code(node.args[0].value)
            message = (f"`{name}` is dropout written by hand (a random keep mask, rescaled by the keep "
                       f"probability) and reads no training flag: run here whatever the module's mode, it drops "
                       f"out after `model.eval()` too, so evaluation and inference are noisy; call it only when "
                       f"`{self_name}.training` (nn.Dropout is the identity in eval mode)")
            fix = FixSpec(f"Call {name} in training mode only",
                          (Replace(node, f"({code(node)} if {self_name}.training else {dropped})"),), safe=False)
            self.report(node, message, fix=fix)
            return
        if self._hand_draw(method) is not node:
            return
        message = (f"`{self.walk.klass.name.value}.{method.name.value}` is dropout written by hand (a random keep "  # type: ignore[union-attr]
                   f"mask, rescaled by the keep probability) and never reads `{self_name}.training`: unlike "
                   f"nn.Dropout it stays on after `model.eval()`, so evaluation and inference are noisy; return the "
                   f"input unchanged when `not {self_name}.training`")
        self.report(node, message)

    def _hand_draw(self, function: cst.FunctionDef) -> cst.Call | None:
        """The draw of `function` when it is dropout written by hand that reads no training flag;
        once per function and lint."""
        return self.model.remembered(
            ("trn704:hand-draw", id(function)),
            lambda: None if reads_training(function) else dropout_draw(function, self.names.qualify))

    def _in_model(self) -> tuple[cst.FunctionDef, str] | None:
        """(method, its instance's name) when this call runs in a model's method that forward reaches,
        outside an `if` on the training mode."""
        method = self._model_method()
        if method is None or self._guarded_by_mode():
            return None
        self_name = _first_param(method)
        return None if self_name is None else (method, self_name)

    def _guarded_by_mode(self) -> bool:
        """`if self.training and p > 0: x = F.dropout(x, p)`: only runs in training mode."""
        return any(isinstance(n, (cst.If, cst.IfExp)) and "training" in code(n.test) for n in self.walk.stack)

    def _model_method(self) -> cst.FunctionDef | None:
        """The method of a model class this call is in, when forward reaches it."""
        klass = self.walk.klass
        if klass is None or klass.name.value not in self.model.model_classes:
            return None
        stack = self.walk.stack
        at = stack.index(klass)
        method = next((f for f in self.walk.functions if stack.index(f) > at), None)
        if method is None or stack.index(method) != at + 2:  # ClassDef > IndentedBlock > FunctionDef
            return None
        name = method.name.value
        if name == "forward":
            return method
        klasses = lineage_members(self.model, klass.name.value)
        if any(name in reachable_methods(self.model, k, ("forward",)) for k in klasses):
            return method
        return None


def _first_param(method: cst.FunctionDef) -> str | None:
    params = [*method.params.posonly_params, *method.params.params]
    if not params or method.decorators:
        return None  # a staticmethod/classmethod/property has no module instance
    return params[0].name.value
