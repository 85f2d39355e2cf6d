"""TRN503 per-step-host-transfer: a constant tensor (`torch.zeros(n)`, `torch.tensor(0.5)`,
`torch.arange(k)`) built on the CPU and moved to the GPU with `.to(device)`/`.cuda()`
inside the training loop: an allocation and a synchronous host-to-device copy every step.

Only when the `.to(...)` argument is a device (a name or attribute naming one,
`x.device`, a "cuda" string, `torch.device(...)`), never a dtype; `torch.tensor` only of
literals (tensors built from batch data have to be copied); `zeros_like(src)` only where
`src` is known to be on the CPU (it is built on `src`'s device). Fix (safe): create it on
the device with `device=`."""

from __future__ import annotations

import re

import libcst as cst

from ..analysis.scopes import code
from ..analysis.vocab import vocab
from ..analysis.training import Routine
from ..analysis.values import literal_data
from ..rule import FixSpec, Replace
from ..walk import iter_nodes
from .trn7xx_training_base import RoutineRule



class PerStepHostTransfer(RoutineRule):
    CODE = "TRN503"

    def check(self, routine: Routine) -> None:
        training = self.training
        loops = set(training.step_loops(routine))
        for event in routine.events:
            if event.kind != "host_transfer" or not event.loops or not loops & set(event.loops):
                continue
            call: cst.Call = event.node  # type: ignore[assignment]
            inner: cst.Call = call.func.value  # type: ignore[attr-defined]
            device = self._device(call)
            if device is None:
                continue
            if event.receiver == "torch.tensor" and not all(literal_data(a.value) for a in inner.args if a.keyword is None):
                continue
            if event.receiver.endswith("_like") and not self._source_on_host(routine, event, inner):
                continue  # built on its source's device: a copy only where that source is on the CPU
            creator = code(inner.func)
            message = (f"`{code(call)[:60]}` builds a tensor on the CPU and copies it to the GPU every training "
                       f"step: create it on the device (`{creator}(..., device={device})`), or once before the loop.")
            fix = None
            if not any(a.keyword is not None and a.keyword.value == "device" for a in inner.args):
                args = [code(a).rstrip(", ") for a in inner.args]
                fix = FixSpec(f"Create it with `device={device}`",
                              (Replace(call, f"{creator}({', '.join(args + [f'device={device}'])})"),))
            self.report(call, message, fix=fix)

    def leave_Module(self, node: cst.Module) -> None:
        self._module = node  # the flow root of the block's module-level routine
        super().leave_Module(node)

    def _source_on_host(self, routine: Routine, event, like: cst.Call) -> bool:
        """`zeros_like(src)` is built on `src`'s device: on the CPU only when `src` is, that is when
        it is such a tensor itself, or a name every binding of which that reaches the call (on
        some path) builds one. A parameter, a batch or a model output may already be on the GPU."""
        source = like.args[0].value if like.args and like.args[0].keyword is None else None
        if not isinstance(source, cst.Name):
            return source is not None and self._host_tensor(source)
        root = routine.node if routine.node is not None else getattr(self, "_module", None)
        if root is None:
            return False
        flow = self.analysis.scope_of(routine.node).flow(root)
        candidates = [event.stmt, *(getattr(event.stmt, "body", ()) or ())]
        statement = next((n for n in candidates if flow.node_of(n) is not None and
                          any(inner is event.node for inner in iter_nodes(n))), None)
        bindings = flow.reaching(statement, source.value) if statement is not None else []
        return bool(bindings) and all(type(b) is cst.Assign and len(b.targets) == 1 and
                                      isinstance(b.targets[0].target, cst.Name) and self._host_tensor(b.value)
                                      for b in bindings)

    def _host_tensor(self, expr: cst.BaseExpression) -> bool:
        """A tensor built on the CPU: `.cpu()`, `torch.from_numpy(...)`, or a torch constant
        (`torch.zeros(n)`, `torch.tensor([...])`) without `device=`."""
        if not isinstance(expr, cst.Call):
            return False
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "cpu" and not expr.args:
            return True
        qualified = self.names.qualify(expr.func) or ""
        last = qualified.rsplit(".", 1)[-1]
        if qualified == "torch.from_numpy":
            return True
        return qualified == f"torch.{last}" and last in vocab().training_constant_creators and \
            not last.endswith("_like") and not any(a.keyword is not None and a.keyword.value == "device"
                                                   for a in expr.args)

    def _device(self, call: cst.Call) -> str | None:
        method = call.func.attr.value  # type: ignore[attr-defined]
        if method == "cuda":
            return '"cuda"' if not call.args else None
        if len(call.args) != 1 or call.args[0].keyword is not None:
            return None
        value = call.args[0].value
        text = code(value)
        if isinstance(value, cst.SimpleString):
            return text if re.match(r"^[rbu]?['\"](cuda|mps|xpu)", text) else None
        if isinstance(value, cst.Call) and (self.names.qualify(value.func) or "") == "torch.device":
            return text
        return text if vocab().pattern("training_device_pattern").search(text) and not text.startswith("torch.") else None
