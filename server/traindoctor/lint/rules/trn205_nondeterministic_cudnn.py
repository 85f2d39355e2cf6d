"""TRN205 nondeterministic-cudnn-in-seeded-program (strict): `cudnn.benchmark
= True` in a program that seeds for reproducibility. Autotuning times the
candidate convolution algorithms on every run and keeps the fastest, which
differs between runs and machines (and several are nondeterministic), so the
same seed gives different results. Reported only where the program itself
shows that runs must repeat: it asks for deterministic kernels
(`cudnn.deterministic = True`, `use_deterministic_algorithms(True)`), which
autotuning undoes, or it turns autotuning on inside its own seeding routine (a
function that does nothing but seed). A program that only seeds and turns
autotuning on elsewhere chose the speed: many seed only for a "roughly similar"
run. The seeding may be in a function of another project file called here (its
summary says it seeds torch). The fix sets it to False (unsafe: slower
convolutions)."""

from __future__ import annotations

import libcst as cst

from ..analysis.randomness import is_seeding_routine
from ..analysis.vocab import vocab
from ..rule import FixSpec, Related, Replace, Rule

_SEEDING = ("torch", "cuda", "cuda_all", "all", "helper")


class NondeterministicCudnn(Rule):
    CODE = "TRN205"
    READS = ("names", "seeding")

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if not (isinstance(value, cst.Name) and value.value == "True"):
            return
        target = next((t.target for t in node.targets
                       if (self.names.qualify(t.target) or "") in vocab().cudnn_benchmark), None)
        if target is None or any(isinstance(n, (cst.If, cst.IfExp)) for n in self.walk.stack):
            return  # chosen per run (`if not args.deterministic:`)
        seeds = [s for s in self.model.seeds if s.kind in _SEEDING and not self.model.in_worker(s)]
        seed = seeds[0].node if seeds else None
        if seed is None:  # a function of another project file, called here, that seeds torch
            seed = next((call for call, rng in self.model.project_seed_calls() if rng in _SEEDING), None)
        if seed is None:
            return
        requests = self.model.determinism_requests
        function = self.walk.function
        if requests:
            why = "asks for deterministic kernels, which autotuning undoes"
            related = [Related(requests[0], "deterministic kernels are asked for here")]
        elif function is not None and is_seeding_routine(
                function, [s for s in self.model.seeds if s.function == self.walk.qualname()], self.names.qualify):
            why = "turns it on in its own seeding routine"
            related = [Related(seed, "the program seeds here")]
        else:
            return  # seeds only, autotuning chosen elsewhere for speed: not a contradiction the code shows
        message = (f"`cudnn.benchmark = True` in a seeded program that {why}: cuDNN times candidate convolution "
                   "algorithms on each run and keeps the fastest, which varies between runs, so the same seed gives "
                   "different results; set it to False (and `cudnn.deterministic = True`) for reproducible runs")
        self.report(node, message, fix=FixSpec("Turn cuDNN autotuning off", (Replace(value, "False"),), safe=False),
                    related=related)
