"""TRN503 per-step-host-transfer: a constant tensor (`torch.zeros(n)`, `torch.tensor(0.5)`,
`torch.arange(k)`) built on the CPU and moved to the GPU with `.to(device)`/`.cuda()`
inside the training loop: an allocation and a synchronous host-to-device copy every step.

Only when the `.to(...)` argument is a device (a name or attribute naming one,
`x.device`, a "cuda" string, `torch.device(...)`), never a dtype; `torch.tensor` only of
literals (tensors built from batch data have to be copied). Fix (safe): create it on
the device with `device=`."""

from __future__ import annotations

import re

import libcst as cst

from ..analysis.scopes import code
from ..analysis.vocab import vocab
from ..analysis.training import Routine
from ..analysis.values import literal_data
from ..rule import FixSpec, Replace
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
            creator = code(inner.func)
            message = (f"`{code(call)[:60]}` builds a tensor on the CPU and copies it to the GPU every training "
                       f"step: create it on the device (`{creator}(..., device={device})`), or once before the loop.")
            fix = None
            if not any(a.keyword is not None and a.keyword.value == "device" for a in inner.args):
                args = [code(a).rstrip(", ") for a in inner.args]
                fix = FixSpec(f"Create it with `device={device}`",
                              (Replace(call, f"{creator}({', '.join(args + [f'device={device}'])})"),))
            self.report(call, message, fix=fix)

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
