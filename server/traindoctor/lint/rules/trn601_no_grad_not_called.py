"""TRN601 no-grad-not-called: `with torch.no_grad:` names the class instead of
an instance; a class is not a context manager, so the `with` raises TypeError
when it runs (the decorator form `@torch.no_grad` is fine since torch 2.0).
Adding `()` is what was meant: safe."""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import code
from ..analysis.vocab import vocab
from ..rule import FixSpec, Replace, Rule


class NoGradNotCalled(Rule):
    CODE = "TRN601"
    READS = ("names",)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        item = node.item
        if not isinstance(item, (cst.Name, cst.Attribute)):
            return
        qualified = self.names.qualify(item) or ""
        if qualified not in vocab().grad_mode_classes:
            return
        text = code(item)
        message = (f"`with {text}:` uses the class, not a context manager: it raises TypeError when the "
                   f"`with` runs; call it: `with {text}():`")
        self.report(item, message, fix=FixSpec(f"Call {text}()", (Replace(item, f"{text}()"),)))
