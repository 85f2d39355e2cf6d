"""TRN205 nondeterministic-cudnn-in-seeded-program (strict): `cudnn.benchmark
= True` in a program that seeds for reproducibility. Autotuning times the
candidate convolution algorithms on every run and keeps the fastest, which
differs between runs and machines (and several are nondeterministic), so the
same seed gives different results. Strict: many programs seed only for a
"roughly similar" run and want the speed. The seeding may be in a function of
another project file called here (its summary says it seeds torch). The fix sets it to False (unsafe:
slower convolutions)."""

from __future__ import annotations

import libcst as cst

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
        seed = next((s.node for s in self.model.seeds if s.kind in _SEEDING and not self.model.in_worker(s)), None)
        if seed is None:  # a function of another project file, called here, that seeds torch
            seed = next((call for call, rng in self.model.project_seed_calls() if rng in _SEEDING), None)
        if seed is None:
            return
        message = ("`cudnn.benchmark = True` in a program that seeds: cuDNN times candidate convolution algorithms "
                   "on each run and keeps the fastest, which varies between runs, so the same seed gives different "
                   "results; set it to False (and `cudnn.deterministic = True`) for reproducible runs")
        self.report(node, message, fix=FixSpec("Turn cuDNN autotuning off", (Replace(value, "False"),), safe=False),
                    related=[Related(seed, "the program seeds here")])
