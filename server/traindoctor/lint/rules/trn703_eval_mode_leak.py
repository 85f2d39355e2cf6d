"""TRN703 eval-mode-leak: `model.eval()` inside a training loop (validation each
epoch or every N steps), and nothing in that loop (nor in a helper called from it)
switches the model back with `model.train()`: from then on (or, when an enclosing
loop calls `model.train()`, until its next pass) the model trains with dropout off
and BatchNorm using its running statistics.

Only for the model that is trained: it is put in train mode before the loop, or it
is called in the loop outside no_grad. Quiet on frozen copies (teacher, EMA, target
networks), where the function says the eval mode is meant (a linear probe, a frozen
backbone: a comment or docstring, in the function with the loop or in the helper that
calls `.eval()`), when the model is handed to a function outside the file, and when the loop
calls `train()` on a module that holds it (a parent `nn.Module` whose `train()` is nn.Module's)."""

from __future__ import annotations

import libcst as cst

from ..analysis.model import lineage_of
from ..analysis.names import dotted_name
from ..analysis.scopes import code
from ..analysis.vocab import vocab
from ..analysis.training import BACKWARD, STEP, Routine, same_object
from ..rule import FixSpec, InsertBefore
from ..walk import iter_nodes
from .trn7xx_training_base import RoutineRule

# The claim of the message when no train() follows at all; a monitor that saw the run switch
# back to train mode does not link a finding that makes it (monitor/detectors.py, eval-mode).
NEVER_SWITCHED_BACK = "nothing switches it back"


class EvalModeLeak(RoutineRule):
    CODE = "TRN703"

    def check(self, routine: Routine) -> None:
        training, reported = self.training, set()
        for loop in reversed(routine.loops):  # innermost first
            pairs = training.expanded(routine, loop.index)
            if not any(e.kind in BACKWARD or e.kind in STEP for _, e in pairs):
                continue
            intended = [e.receiver for local, e in pairs
                        if e.kind == "eval" and local is not e and self._documented_where_called(e)]
            for local, event in pairs:
                model = event.receiver
                if event.kind != "eval" or vocab().pattern("training_frozen_model_pattern").search(model) or model in reported:
                    continue
                if any(same_object(model, meant) for meant in intended):
                    continue  # a helper here keeps it in eval mode on purpose (a linear probe's train())
                if any(e.kind == "train" and (same_object(e.receiver, model) or self._parent_of(e.receiver, model, routine)
                                              or self._wraps(e.receiver, model, routine))
                       for _, e in pairs):
                    continue
                if not self._trained(routine, loop.index, model, pairs) or \
                        training.unresolved_calls_with(routine, loop.index, model):
                    continue
                if _documents_intent(routine):
                    return  # "linear probe", "keep the backbone in eval": documented intent (read last: it
                    # renders the function's source)
                reported.add(model)
                restorer = self._trained_in_an_outer_loop(routine, loop.index, model)
                if restorer:
                    message = (f"`{model}.eval()` runs inside the training loop, and `{restorer}.train()` only in an "
                               f"enclosing loop: the training steps after it in this loop, up to the next pass of "
                               f"the enclosing loop, run with dropout off and BatchNorm frozen to its running "
                               f"statistics.")
                else:
                    message = (f"`{model}.eval()` runs inside the training loop and {NEVER_SWITCHED_BACK} with "
                               f"`{model}.train()`: every later training step runs with dropout off and BatchNorm "
                               f"frozen to its running statistics.")
                self.report(local.node, message, fix=self._fix(routine, loop.index, model, pairs))

    def _documented_where_called(self, event) -> bool:
        """The in-file function whose body holds this `.eval()` documents it as intended."""
        return any(r.node is not None and any(e.node is event.node for e in r.events) and _documents_intent(r)
                   for r in self.training.all)

    def _parent_of(self, parent: str, child: str, routine: Routine) -> bool:
        """`parent.train()` puts `child` back in train mode: `child` is an attribute path below
        `parent` (it holds a module, `.eval()` is called on it), and `parent` is an nn.Module whose
        `train()` is nn.Module's, which sets the mode of every registered submodule. Known for `self`
        in a method of an in-file model class, and for a name bound to an instance of one."""
        if not child.startswith(parent + "."):
            return False
        klass = routine.klass if parent == "self" else ""
        if parent != "self":
            obj = self.model.object(parent, routine.klass)
            klass = obj.callee.rsplit(".", 1)[-1] if obj is not None else ""
        if klass not in self.model.model_classes:
            return False
        # A class of the file (or an in-file base) that defines its own train() may do anything there.
        return not any(self.model.function(f"{name}.train") is not None for name in lineage_of(self.model, klass))

    def _wraps(self, wrapper: str, model: str, routine: Routine) -> bool:
        """`wrapper` was built by a wrapping call given `model` (vocab `wrappers`: `ddp = DDP(model)`,
        `engine, opt, _, _ = deepspeed.initialize(model=model, ...)`, `net, opt = accelerator.prepare(model, opt)`):
        the wrapped module is its registered submodule, so `wrapper.train()` puts it back in train mode."""
        scope = self.analysis.scope_of(routine.node) if routine.node is not None else self.analysis.module_scope
        defs = list(scope.defs.get(wrapper, ()))
        if routine.node is None or wrapper not in scope.defs:
            defs += [d for a in self.model.global_defs.get(wrapper, ()) for d in a.module_scope.defs.get(wrapper, ())]
        for definition in defs:
            call = definition.value
            if definition.how != "assign" or type(call) is not cst.Call or \
                    (dotted_name(call.func) or "").rsplit(".", 1)[-1] not in vocab().wrappers:
                continue
            position = definition.index or 0
            given = next((a.value for a in call.args if a.keyword is not None and a.keyword.value in ("model", "module")),
                         None) if position == 0 else None
            positional = [a.value for a in call.args if a.keyword is None and not a.star]
            if given is None and position < len(positional):
                given = positional[position]
            if given is not None and same_object(dotted_name(given) or "", model):
                return True
        return False

    def _trained_in_an_outer_loop(self, routine: Routine, index: int, model: str) -> str:
        """The receiver of a `train()` that restores `model` in a loop around this one (at the start
        of each epoch, say): the model itself or a module holding it; "" when none does."""
        parent = routine.loops[index].parent
        while parent >= 0:
            for _, e in self.training.expanded(routine, parent):
                if e.kind == "train" and (same_object(e.receiver, model) or self._parent_of(e.receiver, model, routine)):
                    return e.receiver
            parent = routine.loops[parent].parent
        return ""

    def _trained(self, routine: Routine, index: int, model: str, pairs) -> bool:
        inside = set(id(e) for e in routine.events_in(index))
        before = [e for e in routine.events if id(e) not in inside and e.kind == "train" and
                  same_object(e.receiver, model)]
        called = any(e.kind == "call" and same_object(e.receiver.removesuffix(".forward"), model) and not e.no_grad
                     for _, e in pairs)
        return bool(before) or called

    def _fix(self, routine: Routine, index: int, model: str, pairs) -> FixSpec | None:
        """Insert `model.train()` before the statement of the loop body that starts training."""
        body = routine.loops[index].node.body.body  # type: ignore[union-attr]
        def top(event) -> int:
            for position, stmt in enumerate(body):
                if any(node is event.node for node in iter_nodes(stmt)):
                    return position
            return -1
        trains = [top(local) for local, e in pairs if e.kind in BACKWARD or e.kind in STEP]
        evals = [top(local) for local, e in pairs if e.kind == "eval" and e.receiver == model]
        first = min(trains) if trains else -1
        if first < 0 or first in evals:
            return None
        anchor = body[first]
        direct = not isinstance(anchor, (cst.For, cst.While)) and \
            not any(local is not e and top(local) == first for local, e in pairs if e.kind in BACKWARD)
        if direct:  # backward right in this loop: train mode from the top of the iteration
            if min(evals) < first:
                return None
            anchor = body[0]
        # Unsafe: it changes how the model behaves (dropout on, BatchNorm statistics updated), which
        # is wrong where eval mode during training is intended (a frozen backbone, a linear probe).
        return FixSpec(f"Insert `{model}.train()` at the start of the training phase",
                       (InsertBefore(anchor, f"{model}.train()"),), safe=False)


def _documents_intent(routine: Routine) -> bool:
    """A comment or docstring of the function says the eval mode is meant."""
    return routine.node is not None and \
        bool(vocab().pattern("training_eval_intent_pattern").search(code(routine.node)))
