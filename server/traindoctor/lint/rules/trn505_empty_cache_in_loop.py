"""TRN505 empty-cache-in-loop: `torch.cuda.empty_cache()` called unconditionally in
the loop that runs every training step. It synchronises the device and returns the
caching allocator's free blocks to the driver, only for the next step to allocate
them again through cudaMalloc.

Quiet when it runs every N steps or in an OOM handler (conditional), once per epoch
(outside the stepping loop), and outside training loops."""

from __future__ import annotations

from ..analysis.training import Routine
from .trn7xx_training_base import RoutineRule


class EmptyCacheInLoop(RoutineRule):
    CODE = "TRN505"

    def check(self, routine: Routine) -> None:
        steps = set(self.training.step_loops(routine))
        for event in routine.events:
            if event.kind != "empty_cache" or event.conditional or not event.loops:
                continue
            if routine.innermost(event) in steps:
                self.report(event.node, "`torch.cuda.empty_cache()` runs every training step: it synchronises the GPU "
                                        "and hands cached memory back to the driver, only for the next step to "
                                        "allocate it again with cudaMalloc. It frees nothing the allocator would not "
                                        "reuse; remove it (or run it every N steps / after evaluation).")
