"""TRN403 fp16-without-grad-scaler: float16 autocast (an explicit
`dtype=torch.float16`, or the CUDA default of `torch.cuda.amp.autocast()` /
`torch.autocast("cuda")`), or a model cast with `.half()`, in a function that
calls backward, in a file that never builds a GradScaler. Small gradients
underflow to 0 in float16; the scaler multiplies the loss first.

Quiet for bfloat16 (and CPU autocast, whose default is bfloat16), a dtype or
device the analysis cannot read, `enabled=False`, autocast used only for the
forward of a function that does not train, and files whose loss scaling is
managed (accelerate, DeepSpeed, apex, Lightning imports; `engine.backward(loss)`)."""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import code
from ..analysis.names import dotted_name
from ..analysis.values import arg
from ..analysis.vocab import vocab
from ..rule import Rule


class Fp16WithoutGradScaler(Rule):
    CODE = "TRN403"
    READS = ("names", "objects", "precision", "project")

    def visit_WithItem(self, node: cst.WithItem) -> None:
        call = node.item
        if not isinstance(call, cst.Call) or not self._trains_here():
            return
        qualified = self.names.qualify(call.func) or ""
        if qualified not in vocab().autocast_calls or not self._float16(call, qualified) or self._scaled():
            return
        self.report(call, f"`{code(call.func)}` runs in float16 and this function calls backward, but no "
                          f"GradScaler scales the loss: gradients below ~6e-8 underflow to 0 (and large ones "
                          f"overflow to inf), silently stalling training; use `torch.amp.GradScaler` "
                          f"(`scaler.scale(loss).backward()`, `scaler.step(optimizer)`, `scaler.update()`) or "
                          f"autocast to bfloat16")

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or not (
                (func.attr.value == "half" and not node.args) or
                (func.attr.value == "to" and len(node.args) == 1 and
                 (self.names.qualify(node.args[0].value) or "") in vocab().half_dtypes)):
            return
        receiver = self.values(func.value)
        if receiver.kind != "object" or receiver.obj != "model" or not self._trains_here() or self._scaled():
            return
        self.report(node, f"the model is cast to float16 (`{code(node)[:40]}`) and trained without a GradScaler: "
                          f"weights, optimizer state and gradients are all float16, small updates vanish and "
                          f"small gradients underflow to 0; keep the weights in float32 and use autocast with "
                          f"`torch.amp.GradScaler` (or bfloat16)")

    def _trains_here(self) -> bool:
        """This function (for module-level code: any top-level block) calls backward itself."""
        if self.walk.function is None:  # module-level code: a top-level training loop in any block
            return not self.walk.in_no_grad and self.model.has_marker("precision", "module-backward")
        scope = self.scope()
        return not self.walk.in_no_grad and scope.trains and not any(
            _managed_backward(n) for n in scope.backward.values() if isinstance(n, cst.Call))

    def _float16(self, call: cst.Call, qualified: str) -> bool:
        enabled = arg(call, 99, "enabled")
        if isinstance(enabled, cst.Name) and enabled.value == "False":
            return False
        dtype = arg(call, 99, "dtype")
        if dtype is not None:
            return (self.names.qualify(dtype) or "") in vocab().half_dtypes
        if qualified == "torch.cuda.amp.autocast":
            return True
        if qualified.startswith("torch.cpu."):
            return False
        device = arg(call, 0, "device_type")
        return isinstance(device, cst.SimpleString) and device.value.strip("'\"") == "cuda"

    def _scaled(self) -> bool:
        """The file builds a GradScaler (anywhere), or leaves loss scaling to a library."""
        managed = vocab().managed_scaling
        return self.model.has_marker("precision", "grad-scaler") or \
            any(full.split(".")[0] in managed for full in self.names.imports.values()) or \
            self.model.imported.has_kind("scaler")  # a project class wrapping a GradScaler, or one built elsewhere


def _managed_backward(call: cst.Call) -> bool:
    """`accelerator.backward(loss)`, `model_engine.backward(loss)`: the library scales the loss."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward" and \
        any(a.keyword is None for a in call.args) and \
        dotted_name(call.func.value) not in (None, "torch.autograd")
