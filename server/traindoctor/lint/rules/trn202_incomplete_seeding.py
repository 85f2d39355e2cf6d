"""TRN202 incomplete-seeding: a program that seeds some global RNGs (torch,
numpy, random) but draws in the main process from one it never seeds.

Programs that never seed are not flagged (varied randomness is then intended),
nor draws that run before every seed call (a warm-up before the seeded part), nor
draws in a unit test whose assertions read only shapes (they hold for any draw),
nor draws that only DataLoader workers make (a dataset's `__getitem__`, a loader's
`collate_fn`, the `__call__` of a transform handed to a dataset) when every loader running them starts workers, which reseed their RNGs
from the seeded torch generator (analysis/worker_side.py), or builds the dataset with a constructor
argument under which its item access never draws (`if self.split == "train":`), nor draws whose
value only becomes a seed (`seed = random.randint(...)`, then `torch.manual_seed(seed)`:
analysis/seed_draws.py), and neither are library helpers that seed everything. The fix seeds the missing
RNGs with the seed the program already uses, next to its own seed call."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from ..analysis.facts import Draw, Seed
from ..analysis.names import dotted_name
from ..analysis.seed_draws import draws_a_seed, seeds_with
from ..analysis.worker_side import (guard_switches_off, is_loader_class, reseeded_in_workers,
                                    transform_run_by_workers, worker_draw_guards, worker_methods, workers_run)
from ..fixes import insert_after_imports, module_reference
from ..rule import FixSpec, InsertAfter, Related, Rule
from ..walk import child_nodes, iter_nodes

_ORDER = ("torch", "cuda", "cuda_all", "numpy", "random")
_SEED_FUNCTION = {"torch": "torch.manual_seed", "numpy": "np.random.seed", "random": "random.seed"}


def _qualified(model, name: str) -> str:
    """A callee as names.py qualifies it (object callees already are; call sites are local names)."""
    head, dot, rest = name.partition(".")
    full = model.names.imports.get(head)
    return (full + dot + rest) if full else name


def _short(qualified: str) -> str:
    return qualified.replace("numpy.", "np.", 1) if qualified.startswith("numpy.") else qualified


_SHAPE_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad"})
_SHAPE_CALLS = frozenset({"size", "dim", "numel", "len", "isinstance", "type"})


def _shape_only(expr: cst.CSTNode, modules: frozenset[str]) -> bool:
    """Every name the expression reads is read through a shape-like attribute or call, or is a
    constant of an imported module (`torch.float32`)."""
    if type(expr) is cst.Attribute and expr.attr.value in _SHAPE_ATTRIBUTES:
        return True
    if type(expr) is cst.Attribute and (dotted_name(expr) or ".").split(".")[0] in modules:
        return True
    if type(expr) is cst.Call and (dotted_name(expr.func) or "").rsplit(".", 1)[-1] in _SHAPE_CALLS:
        return True
    if type(expr) is cst.Name:
        return expr.value in ("True", "False", "None")
    if type(expr) is cst.Attribute:
        return False  # `out.data`, `model.weight`: a value
    if type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value in ("tuple", "list", "int"):
        return all(_shape_only(a.value, modules) for a in expr.args)  # `tuple(out.shape[1:])`
    if type(expr) is cst.Call:
        return False  # an unknown call of a value (`out.sum()`, `f(x)`)
    return all(_shape_only(child, modules) for child in child_nodes(expr))


def _runs_before(draw: Draw, seed: Seed, order: dict[int, int]) -> bool:
    """`draw` runs before `seed` whenever both run: the same function (or module-level code),
    earlier in the source, and no loop around both (a later pass would draw after the seed).
    Seeding where the seed is cannot make such a draw reproducible."""
    at_draw, at_seed = order.get(id(draw)), order.get(id(seed))
    if at_draw is None or at_seed is None:
        return False  # a seed made by a project helper's call is not a fact of this file: no order known
    return draw.function == seed.function and at_draw < at_seed and not set(draw.loops) & set(seed.loops)


class IncompleteSeeding(Rule):
    CODE = "TRN202"
    READS = ("names", "functions", "seeding", "layout", "project", "objects", "classes", "calls", "constants")

    def visit_Call(self, node: cst.Call) -> None:
        plan = self._plan()
        if plan is None or plan[0].node is not node:
            return
        anchor, missing, first_draw, cuda_only, seeds = plan
        parts, related = [], []
        partial_gpu = any(s.kind == "cuda" for s in seeds) and not any(s.kind == "cuda_all" for s in seeds)
        for lib in missing:
            draw = first_draw.get(lib)
            if lib == "torch" and cuda_only:
                parts.append("torch's CPU generator (model initialization, dropout and shuffling on CPU) is never "
                             "seeded" + (" and `torch.cuda.manual_seed` seeds only the current GPU" if partial_gpu
                                         else ""))
            else:
                parts.append(f"`{lib}`'s global RNG is never seeded" +
                             (f", yet `{_short(draw.name)}` draws from it" if draw is not None else ""))
            if draw is not None:
                related.append(Related(draw.node, f"`{_short(draw.name)}` draws from the unseeded `{lib}` RNG"))
        message = (f"`{_short(anchor.name)}` seeds only part of the program's randomness: " + "; ".join(parts) +
                   ", so runs differ even with the same seed")
        self.report(node, message, fix=self._fix(anchor, missing), related=related)

    def _plan(self):
        """The seed call to flag and what it leaves unseeded (once per block)."""
        return self.model.remembered(self.CODE, self._compute)

    def _compute(self):
        model = self.model
        # seeds inside class methods manage private states (e.g. Megatron's CUDA RNG tracker)
        seeds = [s for s in self._with_project_helpers(model.seeds) if s.kind in _ORDER and not model.in_worker(s)
                 and "." not in s.function]
        # a helper that only seeds CUDA (Megatron's model_parallel_cuda_manual_seed) is called after the
        # program's own seeding: not the program's seeding
        cuda_only = {s.function for s in seeds if s.function} - {s.function for s in seeds if s.kind not in
                                                                  ("cuda", "cuda_all")}
        seeds = [s for s in seeds if s.function not in cuda_only]
        if not any(s.kind in ("torch", "cuda", "cuda_all") for s in seeds) or self._seeds_everything():
            return None  # seeding only `random`/numpy (a data split) does not claim reproducible training
        anchor = min(seeds, key=lambda s: _ORDER.index(s.kind))
        seeded = set()
        for seed in seeds:
            seeded.update(("torch", "cuda") if seed.kind == "torch" else (seed.kind,))
        first_draw: dict[str, Draw] = {}
        facts = model.facts["seeding"]
        order = {id(fact): position for position, fact in enumerate(facts)}  # source order across the file
        for draw in facts:
            if isinstance(draw, Draw) and not self._in_worker_fn(draw) and not self._shape_only_test(draw) and \
                    not self._drawn_in_workers(draw) and not all(_runs_before(draw, seed, order) for seed in seeds) \
                    and not draws_a_seed(model, draw):
                first_draw.setdefault(draw.library, draw)
        project_seeds, project_draws = self._project_randomness()
        if project_seeds & {"all", "helper"}:
            return None  # a project function seeds through a library helper
        seeded |= project_seeds
        for library, draw in project_draws.items():
            first_draw.setdefault(library, draw)
        missing = [lib for lib in ("torch", "numpy", "random") if lib in first_draw and lib not in seeded]
        only_gpu = "torch" not in seeded and any(s.kind in ("cuda", "cuda_all") for s in seeds)
        if only_gpu and "torch" not in missing:
            missing.insert(0, "torch")
        return (anchor, missing, first_draw, only_gpu, seeds) if missing else None

    def _seeds_everything(self) -> bool:
        """A library helper, or a seed helper whose body is neither in this file nor in the
        project index (what it seeds is then unknown)."""
        for seed in self._with_project_helpers(self.model.seeds):
            if seed.kind == "all":
                return True
            if seed.kind == "helper" and self.model.function(seed.name.rsplit(".", 1)[-1]) is None:
                return True
        return False

    def _project_randomness(self) -> tuple[set[str], dict[str, Draw]]:
        """What the objects of project classes built here (their methods) and the project
        functions called here seed and draw from, by their summaries: one Draw per library,
        at the call in this file, named after the method that draws."""
        seeds: set[str] = set()
        draws: dict[str, Draw] = {}
        model = self.model
        if not model.imported:
            return seeds, draws
        used = [(obj.callee, obj.node) for obj in model.facts["objects"]]
        used += [(callee, site.node) for callee, sites in model.calls.items() for site in sites[:1]]
        for callee, node in used:
            qualified = _qualified(model, callee)
            for function, how, library in model.imported.randomness(qualified):
                if how == "seeds":
                    seeds.update(("torch", "cuda") if library == "torch" else (library,))
                elif not self._project_draw_in_workers(callee, qualified, function, library) and \
                        not self._drawn_seed(callee, qualified, library):
                    draws.setdefault(library, Draw(library, function, "", "", "", node))
        return seeds, draws

    def _drawn_seed(self, callee: str, qualified: str, library: str) -> bool:
        """A project function that only returns what it draws (`gen_seeds()`), whose value every call here
        makes a seed (`torch.manual_seed(gen_seeds())`): the draw is the choice of the seed."""
        if library not in (self.model.imported.fact(qualified, "returned_draws") or ()):
            return False
        sites = [site.node for site in self.model.calls.get(callee, ()) if isinstance(site.node, cst.Call)]
        return bool(sites) and all(seeds_with(self.model, site) for site in sites)

    def _drawn_in_workers(self, draw: Draw) -> bool:
        """An in-file draw in a method that only DataLoader workers run (a dataset's `__getitem__`, a
        loader's `collate_fn`), where every object of its class built here is run by a loader that
        starts workers, which reseed that RNG from the seeded torch generator."""
        method = draw.function.rsplit(".", 1)[-1]
        if not draw.klass:
            return False
        reseeded = reseeded_in_workers(self.model, draw.library)
        sites = [site.node for site in self.model.calls.get(draw.klass, ())]
        if reseeded and method == "__call__" and self._transforms_of_workers(sites):
            return True
        if method not in worker_methods(self.model, draw.klass):
            return False
        guards = worker_draw_guards(self.model, draw.klass, (method,))
        return self._sites_quiet(sites, is_loader_class(self.model, draw.klass), reseeded,
                                 guards[0] if guards else None)

    def _sites_quiet(self, sites: list, loader: bool, reseeded: bool, guard: tuple | None) -> bool:
        """Each object built here is run by loaders that start workers (which reseed the RNG), or is
        built with a constructor argument under which the method never draws."""
        return bool(sites) and all(isinstance(site, cst.Call) and (
            (reseeded and workers_run(self.model, site, loader)) or
            (guard is not None and guard_switches_off(self.model, site, guard))) for site in sites)

    def _project_draw_in_workers(self, callee: str, qualified: str, function: str, library: str) -> bool:
        """The same for a draw of a project class built here: the project index names the methods
        of the class that only workers run, and every call here that builds it is run by workers."""
        klass = self.model.imported.klass(qualified)
        if klass is None:
            return False
        reseeded = reseeded_in_workers(self.model, library)
        sites = [site.node for site in self.model.calls.get(callee, ())]
        sites += [obj.node for obj in self.model.facts["objects"] if obj.callee == callee]
        method = function.rsplit(".", 1)[-1]
        if reseeded and method == "__call__" and self._transforms_of_workers(sites):
            return True
        if method not in klass.worker_methods:
            return False
        guard = next((g for g in klass.worker_guards if g[0] == method), None)
        return self._sites_quiet(sites, klass.loader, reseeded, guard)

    def _transforms_of_workers(self, sites: list) -> bool:
        """Every object of the class built here is a transform handed to datasets that workers run
        (`CocoDataset(transform=Compose([Augmenter()]))`): its `__call__` draws in the workers."""
        return bool(sites) and all(isinstance(site, cst.Call) and transform_run_by_workers(self.model, site)
                                   for site in sites)

    def _with_project_helpers(self, seeds):
        """Each call of a seed helper defined in another project file stands for the seeds
        its summary lists (one Seed per RNG, at the call)."""
        found = []
        for seed in seeds:
            kinds = self.model.project_fact(seed.name, "seeds") if seed.kind == "helper" else None
            if kinds:
                found.extend(replace(seed, kind=kind) for kind in kinds)
            else:
                found.append(seed)
        return found

    def _shape_only_test(self, draw: Draw) -> bool:
        """The draw is in a unit test whose every assertion reads values only through their shape
        (`out.shape == (4, 3)`, `x.size(0)`, `len(x)`, `x.dtype`, `isinstance`), or in a helper that
        only such tests call: the tests pass for any draw, so seeding it changes nothing they check."""
        if not draw.function:
            return False
        if self._collected_test(draw.function):
            return self._asserts_only_shapes(draw.function)
        sites = self.model.calls.get(draw.function, ()) if "." not in draw.function else ()
        if not sites or not self.model.remembered("TRN202.has-tests", lambda: any(
                info.name.startswith("test_") or info.klass.startswith("Test")
                for info, _ in self.model.function_home.values())):
            return False  # no unit test in the file: no caller can be one (and no call map is built)
        callers = [self.model.enclosing_function(site.node) for site in sites]
        return all(c is not None and self._collected_test(c.qualname) and self._asserts_only_shapes(c.qualname)
                   for c in callers)

    def _collected_test(self, qualname: str) -> bool:
        """A unit test a runner collects (`test_*`, a method of a `Test*` class) that asserts; a script's
        `test()` is its evaluation, whose numbers a draw does change."""
        info = self.model.function_home[qualname][0] if qualname in self.model.function_home else None
        return info is not None and (info.name.startswith("test_") or info.klass.startswith("Test")) and \
            self.model.is_unit_test(qualname)

    def _asserts_only_shapes(self, qualname: str) -> bool:
        node = self.model.function_home[qualname][0].node
        checks = [n.test for n in iter_nodes(node) if type(n) is cst.Assert]
        for call in iter_nodes(node):
            if type(call) is not cst.Call:
                continue
            if (dotted_name(call.func) or "").rsplit(".", 1)[-1].startswith("assert"):
                checks.extend(a.value for a in call.args)
            elif (self.model.names.qualify(call.func) or "").startswith(("pytest.", "numpy.testing.", "torch.testing.")):
                return False  # pytest.approx, assert_allclose: comparisons of values
        modules = frozenset(self.model.names.imports)
        return bool(checks) and all(_shape_only(check, modules) for check in checks)

    def _in_worker_fn(self, draw: Draw) -> bool:
        function = draw.function.rsplit(".", 1)[-1]
        return bool(function) and function in self.model.worker_fns

    def _fix(self, anchor: Seed, missing: list[str]) -> FixSpec | None:
        seed = anchor.seed
        if anchor.stmt is None or not seed:
            return None
        lines, imports = [], []
        for lib in missing:
            name, line = module_reference(self.model, lib)
            if line is not None:
                imports.append(line)
            lines.append(f"{name}.random.seed({seed})" if lib == "numpy" else
                         f"{name}.manual_seed({seed})" if lib == "torch" else f"{name}.seed({seed})")
        changes = [InsertAfter(anchor.stmt, "\n".join(lines))]
        if imports:
            insert = insert_after_imports(self.model, imports)
            if insert is None:
                return None
            changes.append(insert)
        names = ", ".join(f"`{_SEED_FUNCTION[lib]}`" for lib in missing)
        simple = seed.lstrip("-").isdigit() or seed.replace(".", "").replace("_", "").isalnum()
        return FixSpec(f"Also seed {names} with the same seed", tuple(changes), safe=simple)


