"""Shared shape of the rules that read the training structure (analysis/training.py):
each function, and each block's module-level code, is judged once when it ends."""

from __future__ import annotations

import libcst as cst

from ..analysis.training import TRAINING_READS, Routine
from ..rule import Rule, types_besides_module


class RoutineRule(Rule):
    """Calls `check(routine)` for every function and for the block's module-level code."""

    READS: tuple[str, ...] = ("names", *TRAINING_READS)

    @classmethod
    def applies_to(cls, analysis) -> bool:
        """Its leave_Module judges the block's module-level routine, which only exists
        when that code has training events or loops."""
        node_types, module_routine = analysis.shape
        return module_routine or not types_besides_module(cls).isdisjoint(node_types)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        routine = self.training.routine_at(node)
        if routine is not None and (routine.events or routine.loops):
            self.check(routine)

    def leave_Module(self, node: cst.Module) -> None:
        routine = self.training.block_routine(self.analysis)
        if routine is not None:
            self.check(routine)

    def check(self, routine: Routine) -> None:
        raise NotImplementedError

    def optimizer_of(self, step) -> str:
        """The optimizer a step event steps (`opt.step()`, `scaler.step(opt)`), "" if not a name."""
        name = step.receiver if step.kind == "step" else step.arg
        return name if name and all(part.isidentifier() for part in name.split(".")) else ""
