"""TRN407 bce-on-sigmoid: BCELoss / binary_cross_entropy fed sigmoid outputs,
where BCEWithLogitsLoss on the logits is the stable form. Probabilities are the
model's `prob` fact (a sigmoid call, an `nn.Sequential` ending in `nn.Sigmoid`,
an in-file model whose forward returns one). One loss object called at many
places (a GAN's criterion, on the real and the fake batch, for the generator and
the discriminator) is one finding: the first call, the others as related places."""

from __future__ import annotations

import libcst as cst

from ..analysis.collect import code
from ..analysis.values import arg
from ..analysis.vocab import vocab
from ..rule import FixSpec, Related, Replace, Rule


class BceOnSigmoid(Rule):
    CODE = "TRN407"
    READS = ("names", "objects", "classes", "functions", "calls", "globals")

    def visit_Call(self, node: cst.Call) -> None:
        if not self.gradient_flows():
            return  # no gradient, no vanishing gradient
        v = vocab()
        called = self.values.loss_call(node)
        # a criterion bound to BCELoss on one path (`if multi_label:`) applies it wherever that path was taken
        loss = next((c for c in called.possible() if c.loss in v.bce_on_probabilities), None) if called else None
        if loss is None:
            return
        ctor, inline = loss.ctor, not loss.shared
        first = arg(node, 0, "input")
        if first is None:
            return
        value = self.values(first)
        if value.prob != "sigmoid":
            return
        fix = None
        if isinstance(first, cst.Call) and value.origin is first and first.args and \
                (self.names.qualify(first.func) or "") in v.sigmoid:
            logits = code(first.args[0].value)
            if ctor is None:
                fix = FixSpec("Use binary_cross_entropy_with_logits on the logits",
                              (Replace(node.func, code(node.func) + "_with_logits"), Replace(first, logits)))
            elif code(ctor.func).endswith("BCELoss"):
                # a shared criterion may also be called on real probabilities elsewhere: unsafe
                fix = FixSpec("Use BCEWithLogitsLoss on the logits",
                              (Replace(ctor.func, code(ctor.func)[:-len("BCELoss")] + "BCEWithLogitsLoss"),
                               Replace(first, logits)), safe=inline)
        related = [Related(value.origin, "the sigmoid output passed to BCE")] \
            if value.origin is not None and value.origin is not first else []
        group = None
        if loss.shared and ctor is not None:
            related.append(Related(ctor, "the loss object is built here"))
            group = Related(ctor, "the same loss object is called on sigmoid outputs here")
        self.report(node, fix=fix, related=related, group=group)
