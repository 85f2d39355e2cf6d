"""TRN302 double-softmax: probabilities passed to a loss that applies the
softmax/sigmoid itself. `cross_entropy`/`CrossEntropyLoss` take logits and run
log_softmax on them; `BCEWithLogitsLoss` runs a sigmoid. Fed softmax (sigmoid)
outputs they squash twice: the loss is bounded away from 0 and its gradient
nearly vanishes. Probabilities are the model's `prob` fact (functions, Tensor
methods, modules, a Sequential ending in Softmax/Sigmoid, an in-file model or
function returning one, `self(x)` in the model's own methods, a model built by a
factory of another project file, a torchvision classifier whose head was
replaced). log_softmax outputs are not flagged: log_softmax is idempotent, so
cross_entropy(log_softmax(x)) equals cross_entropy(x).
The fix passes the logits where the softmax call is the argument itself; it
changes the loss's value (for the better): unsafe.
Trainers that call the loss themselves (skorch's `NeuralNet(Module, criterion=Loss)`:
vocabulary module_criterion_trainers) pair the class's forward with the loss class."""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import code
from ..analysis.values import arg
from ..analysis.vocab import vocab
from ..rule import FixSpec, Related, Replace, Rule

_WANTS = {"softmax": "softmax_losses", "sigmoid": "sigmoid_losses"}


class DoubleSoftmax(Rule):
    CODE = "TRN302"
    READS = ("names", "objects", "classes", "functions", "calls", "globals")

    def visit_Call(self, node: cst.Call) -> None:
        loss = self._loss_kind(node)
        if loss is None:
            self._trainer(node)
            return
        first = arg(node, 0, "input")
        if first is None:
            return
        value = self.values(first)
        if value.prob != loss:
            return
        name = code(node.func) if len(code(node.func)) < 40 else "the loss"
        applies = "log_softmax" if loss == "softmax" else "sigmoid"
        message = (f"`{name}` applies {applies} to its input, but it is given {loss} outputs: {loss} is applied "
                   f"twice, so the loss cannot approach 0 and its gradient nearly vanishes; pass the logits")
        fix = None
        if isinstance(first, cst.Call):
            logits = self._logits_of(first, loss)
            if logits is not None:
                fix = FixSpec("Pass the logits", (Replace(first, code(logits)),), safe=False)
        related = [Related(value.origin, f"the {loss} is applied here")] \
            if value.origin is not None and value.origin is not first else []
        self.report(node, message, fix=fix, related=related)

    def _trainer(self, node: cst.Call) -> None:
        """`NeuralNet(Net, criterion=nn.CrossEntropyLoss)` (skorch): the trainer calls the loss on
        the output of the class's `forward`; a class of this file whose forward returns softmax
        (sigmoid) outputs is squashed twice."""
        v = vocab()
        if (self.names.qualify(node.func) or "") not in v.module_criterion_trainers:
            return
        module, criterion = arg(node, 0, "module"), arg(node, 1, "criterion")
        if module is None or criterion is None:
            return
        klass = self.names.qualify(module) or ""
        loss = self.names.qualify(criterion) or ""
        wants = next((prob for prob, key in _WANTS.items() if loss in getattr(v, key)), None)
        info = self.model.function(f"{klass}.forward") if klass in self.model.model_classes else None
        if wants is None or info is None:
            return
        value = self.values.summary(info)
        if value.prob != wants:
            return
        applies = "log_softmax" if wants == "softmax" else "sigmoid"
        message = (f"`{code(node.func)}` calls `{code(criterion)}` on the output of `{klass}.forward`, which "
                   f"returns {wants} outputs, and the loss applies {applies} to its input: {wants} is applied "
                   f"twice, so the loss cannot approach 0 and its gradient nearly vanishes; return the logits")
        related = [Related(value.origin, f"the {wants} is applied here")] if value.origin is not None else []
        self.report(criterion, message, related=related)

    def _loss_kind(self, node: cst.Call) -> str | None:
        """"softmax" for cross entropy, "sigmoid" for BCE with logits (functional or module), else None."""
        loss = self.values.loss_call(node)
        if loss is None:
            return None
        v = vocab()
        return next((prob for prob, key in _WANTS.items() if loss.loss in getattr(v, key)), None)

    def _logits_of(self, call: cst.Call, loss: str) -> cst.BaseExpression | None:
        """`F.softmax(z, dim=1)` -> z; `z.softmax(-1)` -> z; None when the call is anything else."""
        v = vocab()
        qualified = self.names.qualify(call.func) or ""
        if qualified in (v.softmax if loss == "softmax" else v.sigmoid):
            return arg(call, 0, "input")
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == loss and \
                not qualified.startswith("torch."):
            return call.func.value
        return None
