"""TRN203 distributed-sampler-without-set-epoch: a shuffling DistributedSampler feeds
a DataLoader that an epoch loop iterates (directly, or by handing it to a helper),
and nothing in the file calls `set_epoch`: every epoch sees the same order.

The sampler or the loader may come from helpers that return them, in this file or another
(`sampler = make_sampler(ds)`, `loader = build_loader(ds)`, `train_loader, val_loader =
build_loaders(...)`: Training.returns, the summary's `returns_sampling`), or from the class's `__init__`
(`self.loader = DataLoader(ds, sampler=DistributedSampler(ds))`, iterated by another method), or on one
path only (`sampler = DistributedSampler(ds) if distributed else None`: the fix then tests for `set_epoch`).
Quiet on `shuffle=False` samplers, and when any `set_epoch` appears in the file
(on the sampler, the loader's sampler or batch sampler, in a helper).
Loaders that build the DistributedSampler themselves (DGL's `use_ddp=True, shuffle=True`)
have their own `set_epoch`; they are vocabulary (training_ddp_loaders)."""

from __future__ import annotations

from ..analysis.training import Event, Routine
from ..rule import FixSpec, InsertBefore, Related
from .trn7xx_training_base import RoutineRule


class SamplerWithoutSetEpoch(RoutineRule):
    CODE = "TRN203"

    def check(self, routine: Routine) -> None:
        training = self.training
        calls = [e for r in training.all for e in r.events if e.kind == "call"]
        if "set_epoch" in training.event_kinds or any(self.model.project_fact(e.receiver, "set_epoch") for e in calls):
            return  # the epoch is stepped here, or by another file's helper this file calls
        if "sampler" not in training.event_kinds and not any(
                e.kind == "loader" and e.arg.startswith("use_ddp") for r in training.all for e in r.events) and \
                not any(training.project_returns(e) for e in calls):
            return  # no DistributedSampler is built anywhere in the file (nor in a helper here or elsewhere)
        events = training.with_returned_objects(routine)  # `sampler = make_sampler(ds)` builds one too
        if routine.node is None:  # module-level code: the samplers and loaders of earlier blocks too
            earlier = training.routines("")
            events = [e for r in earlier[:earlier.index(routine)] for e in training.with_returned_objects(r)] + \
                events
        elif routine.klass and not routine.qualname.endswith(".__init__"):  # `self.loader` built in __init__
            events = [e for r in training.routines(f"{routine.klass}.__init__")
                      for e in training.with_returned_objects(r)
                      if e.kind == "sampler" or e.kind == "loader" and e.receiver.startswith("self.")] + events
        for build in events:
            own_sampler = build.kind == "loader" and build.arg.startswith("use_ddp") and build.receiver
            if (build.kind != "sampler" or build.arg == "shuffle=False") and not own_sampler:
                continue
            sampler = build.receiver
            loaders = [build] if own_sampler else [
                e for e in events if e.kind == "loader" and e.receiver and
                ((sampler and e.arg == sampler) or "DistributedSampler(" in e.arg)]
            for loader in loaders:
                access = sampler if sampler and loader.arg == sampler or own_sampler else f"{loader.receiver}.sampler"
                found = self.training.epoch_loop(routine, loader.receiver, loader)
                if found is None:
                    continue
                epoch, use = found
                what = "a loader with its own shuffling DistributedSampler" if own_sampler else \
                    "a shuffling DistributedSampler"
                message = (f"`{access}` ({what}) is iterated every epoch but `set_epoch` is "
                           f"never called: it shuffles with the same seed each time, so every epoch sees the "
                           f"same order. Call `{access}.set_epoch(epoch)` at the start of each epoch.")
                guarded = build.conditional or loader.conditional  # a RandomSampler (or None) on other paths
                # DGL's loader.set_epoch raises unless use_ddp is on: no fix when it depends on the run
                fix = None if own_sampler and (guarded or build.arg != "use_ddp") else \
                    self._fix(epoch, access, guarded)
                self.report(use, message, fix=fix,
                            related=[Related(loader.node, "the DataLoader with the sampler")])
                return
        if not self._check_handed(routine, events):
            self._check_passed(routine)

    def _check_handed(self, routine: Routine, events: list[Event]) -> bool:
        """A DataLoader over a shuffling DistributedSampler built here, handed (by position or
        keyword) to another file's function whose summary says it iterates that parameter every
        epoch (`epoch_loaders`) and never calls `set_epoch`. Reported at the call."""
        samplers = {e.receiver for e in events if e.kind == "sampler" and e.arg != "shuffle=False" and e.receiver}
        loaders = {e.receiver: e for e in events if e.kind == "loader" and e.receiver and (
            e.arg in samplers or "DistributedSampler(" in e.arg)}
        if not loaders:
            return False
        for call in routine.events:
            if call.kind != "call" or self.training.callee(call, routine) is not None:
                continue
            iterated = self.model.project_fact(call.receiver, "epoch_loaders")
            if not iterated:
                continue
            mapping = call.passed(self.model.project_fact(call.receiver, "params") or ())
            for param in iterated:
                loader = loaders.get(mapping.get(param, ""))
                if loader is None:
                    continue
                message = (f"`{loader.receiver}` is a DataLoader over a shuffling DistributedSampler, and "
                           f"`{call.receiver}(...)` (another file) iterates it every epoch as `{param}` but never "
                           f"calls `set_epoch`: every epoch sees the same order. Call "
                           f"`{param}.sampler.set_epoch(epoch)` at the start of each epoch there.")
                self.report(call.node, message,
                            related=[Related(loader.node, "the DataLoader with the sampler")])
                return True
        return False

    def _check_passed(self, routine: Routine) -> None:
        """A loader parameter that an in-file caller fills with a DataLoader over a shuffling
        DistributedSampler (by position or keyword), iterated here every epoch."""
        training = self.training
        params = [p for p in routine.params if p not in ("self", "cls")]
        if routine.node is None or not params:
            return
        passed: dict[str, list[Event]] = {}
        for caller in training.all:
            if caller is routine:
                continue
            events = training.with_returned_objects(caller)
            samplers = {e.receiver for e in events if e.kind == "sampler" and e.arg != "shuffle=False" and e.receiver}
            loaders = {e.receiver: e for e in events if e.kind == "loader" and e.receiver and (
                e.arg in samplers or "DistributedSampler(" in e.arg or e.arg == "use_ddp")}
            for event in caller.events:
                if event.kind != "call" or training.callee(event, caller) is not routine:
                    continue
                for param, argument in event.passed(routine.params).items():
                    if argument in loaders:
                        passed.setdefault(param, []).append(loaders[argument])
        for param, loaders in passed.items():
            found = self.training.epoch_loop(routine, param, None)
            if found is None:
                continue
            epoch, use = found
            own_sampler = all(e.arg == "use_ddp" for e in loaders)
            if not own_sampler and any(e.arg == "use_ddp" for e in loaders):
                continue  # DGL loaders and torch ones mixed: no one call fits both
            access = param if own_sampler else f"{param}.sampler"
            message = (f"`{param}` is a DataLoader over a shuffling DistributedSampler (the caller passes "
                       f"`{loaders[0].receiver}`) and is iterated every epoch here, but `set_epoch` is never "
                       f"called: every epoch sees the same order. Call `{access}.set_epoch(epoch)` at the start "
                       f"of each epoch.")
            # callers elsewhere may pass a loader without a DistributedSampler: the call is guarded;
            # DGL's set_epoch raises without use_ddp, so it is offered only when every caller's has it
            if own_sampler:
                fix = None if any(e.conditional for e in loaders) else self._fix(epoch, access, False)
            else:
                fix = self._fix(epoch, access, True)
            self.report(use, message, fix=fix,
                        related=[Related(e.node, "the DataLoader the caller passes") for e in loaders])
            return

    def _fix(self, loop, access: str, guarded: bool) -> FixSpec | None:
        if not loop.target.isidentifier() or loop.node is None:
            return None
        body = loop.node.body.body
        call = f"{access}.set_epoch({loop.target})"
        text = f"if hasattr({access}, \"set_epoch\"):\n    {call}" if guarded else call
        return FixSpec(f"Call `{call}` at the top of the epoch loop", (InsertBefore(body[0], text),))

