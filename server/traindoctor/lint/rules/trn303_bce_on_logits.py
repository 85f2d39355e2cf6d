"""TRN303 bce-on-logits: `BCELoss`/`binary_cross_entropy` given values known to
be raw scores (logits): the output of a Linear layer, of a model (in-file class,
Sequential) whose last step is one, of `outputs.logits`, or of an in-file function
returning one. BCE wants probabilities; unknown values are never assumed to be
logits. The fix switches to the with-logits form, which applies the sigmoid
itself: safe for the functional form and an inline `nn.BCELoss()`, unsafe for a
shared criterion object (it may also be called on real probabilities)."""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import code
from ..analysis.values import arg
from ..analysis.vocab import vocab
from ..rule import FixSpec, Related, Replace, Rule


class BceOnLogits(Rule):
    CODE = "TRN303"
    READS = ("names", "objects", "classes", "functions", "calls", "globals")

    def visit_Call(self, node: cst.Call) -> None:
        loss = self.values.loss_call(node)
        if loss is None or loss.loss not in vocab().bce_on_probabilities:
            return
        ctor, shared = loss.ctor, loss.shared
        first = arg(node, 0, "input")
        if first is None:
            return
        value = self.values(first)
        if value.prob != "logits":
            return
        message = ("BCE expects probabilities in [0, 1] but is given logits (raw scores, no sigmoid on the way): "
                   "it raises 'all elements of input should be between 0 and 1' (a device-side assert on CUDA) "
                   "as soon as a score leaves [0, 1], and the loss is meaningless until then; use "
                   "`BCEWithLogitsLoss`/`binary_cross_entropy_with_logits`, which apply the sigmoid stably")
        if ctor is None:
            fix = FixSpec("Use binary_cross_entropy_with_logits",
                          (Replace(node.func, code(node.func) + "_with_logits"),))
        elif code(ctor.func).endswith("BCELoss"):
            func, whole = code(ctor.func), code(ctor)  # the constructor is the fact node other blocks can edit
            fix = FixSpec("Use BCEWithLogitsLoss",
                          (Replace(ctor, func[:-len("BCELoss")] + "BCEWithLogitsLoss" + whole[len(func):]),),
                          safe=not shared)
        else:
            fix = None
        related = [Related(value.origin, "the logits come from here")] \
            if value.origin is not None and value.origin is not first else []
        self.report(node, message, fix=fix, related=related)
