"""TRN603 backward-under-no-grad: `.backward()` on a value computed inside
`torch.no_grad()`/`inference_mode()` (or a function decorated with them):
autograd recorded nothing, so backward raises "element 0 of tensors does not
require grad and does not have a grad_fn". The binding's grad mode is the
analysis's (collect.Def.grad_off: `enable_grad()` inside re-enables it). No fix:
which computation was meant to be differentiated is the author's call.

Also a helper that leaves autograd off (`torch.set_grad_enabled(False)` and never back
on) called in a loop that calls backward: every later backward raises."""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import code
from ..analysis.names import dotted_name
from ..analysis.training import BACKWARD, TRAINING_READS, Routine
from ..rule import Related
from .trn7xx_training_base import RoutineRule


class BackwardUnderNoGrad(RoutineRule):
    CODE = "TRN603"
    READS = ("names", *TRAINING_READS)

    def check(self, routine: Routine) -> None:
        training = self.training
        if "grad_mode" not in training.event_kinds:
            return
        for loop in routine.loops:
            events = routine.events_in(loop.index)
            if not any(e.kind in BACKWARD for _, e in training.expanded(routine, loop.index)) or \
                    any(e.kind == "grad_mode" and e.arg == "on" for e in events):
                continue
            for event in events:
                target = training.callee(event, routine) if event.kind == "call" else None
                switch = training.leaves_grad_off(target.qualname) if target is not None else None
                if switch is None:
                    continue
                message = (f"`{event.receiver}(...)` leaves autograd off (`torch.set_grad_enabled(False)` in it is "
                           f"never undone): every `.backward()` after it in this loop raises \"element 0 of tensors "
                           f"does not require grad\"; use `with torch.no_grad():` inside `{event.receiver}`")
                self.report(event.node, message, related=[Related(switch.node, "autograd is turned off here")])
                return

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "backward":
            return
        receiver = func.value
        while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
            if receiver.func.attr.value == "scale" and receiver.args:  # scaler.scale(loss).backward()
                receiver = receiver.args[0].value
            else:  # loss.mean().backward()
                receiver = receiver.func.value
        name = dotted_name(receiver)
        if name is None:
            return
        scope = self.scope()
        head = name.split(".")[0]
        key = name if name in scope.defs else head
        found = scope.lookup(key, self.walk.order)
        if found is None or not found.grad_off or found.value is None or found.how == "param":
            return
        if any(not d.grad_off for d in scope.defs.get(key, ())):
            return  # also bound with autograd on (another branch): cannot tell which reaches
        if "requires_grad" in code(found.value) or self._made_to_require_grad(key):
            return  # a leaf created with requires_grad inside no_grad still gets gradients
        message = (f"`{name}` is computed inside `torch.no_grad()`/`inference_mode()`: autograd recorded no graph, "
                   f"so `.backward()` raises \"element 0 of tensors does not require grad\"; compute it "
                   f"outside the no-grad block")
        self.report(node, message)

    def _made_to_require_grad(self, name: str) -> bool:
        function = self.walk.function
        if function is None:
            return False
        text = code(function.body)
        return f"{name}.requires_grad" in text
