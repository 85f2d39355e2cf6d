"""TRN201 unseeded-dataloader-workers, true for the torch version in use.

Since torch 1.9 every DataLoader worker seeds `random`, `torch` and NumPy's
global RNG from a base seed drawn from the parent's torch RNG, so a seeded
program's workers are reproducible. What still breaks (any version):
- an RNG object the dataset creates in `__init__` (`default_rng()`, `RandomState`,
  `random.Random`, `torch.Generator`): copied into every worker in the same state,
  so all workers draw identical streams;
- a `worker_init_fn` that reseeds every worker with one constant (reported at that seed,
  once, with the loaders as related locations; the function may reach the loader through a
  local name bound to it on some path).
Before 1.9, also a dataset drawing from NumPy's global RNG (not reseeded per worker).
"""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import code
from ..analysis.environment import describe, torch_version, workers_reseed_numpy
from ..analysis.model import dataset_classes_of, lineage_of, reachable_methods
from ..analysis.randomness import arg, is_false
from ..analysis.vocab import vocab
from ..fixes import free_name, insert_after_imports, module_reference, with_kwargs
from ..rule import FixSpec, Related, Replace, Rule


class UnseededDataLoaderWorkers(Rule):
    CODE = "TRN201"
    READS = ("names", "objects", "classes", "functions", "seeding", "constants", "layout")

    def visit_Call(self, node: cst.Call) -> None:
        if not self._is_dataloader(node) or any(a.star for a in node.args):
            return
        positions = vocab().dataloader_positions
        workers = arg(node, "num_workers", positions["num_workers"])
        if workers is None or self._is_zero(workers):
            return
        version = torch_version(self.model.path)
        init_fn = arg(node, "worker_init_fn", positions["worker_init_fn"])
        if init_fn is not None and not is_false(init_fn):
            self._check_constant_reseed(node, init_fn, version)
            return
        klass = self.walk.klass.name.value if self.walk.klass is not None else ""
        dataset = arg(node, "dataset", positions["dataset"])
        for name in dataset_classes_of(self.model, self.scope(), dataset, self.walk.order, klass):
            if self._owned_rng(node, name, code(workers), version):
                return
            if not workers_reseed_numpy(version) and self._numpy_global(node, name, code(workers), version):
                return

    def _owned_rng(self, node: cst.Call, klass: str, workers: str, version) -> bool:
        lineage = lineage_of(self.model, klass)
        reachable = reachable_methods(self.model, klass)
        uses = self.model.of_classes("method_uses", lineage)
        for obj in self.model.of_classes("objects_of_owner", lineage):
            if obj.where != "__init__" or self.model.kind_of_callee(obj.callee) != "rng":
                continue
            attr = obj.name.removeprefix("self.")
            if any(o.owner in lineage and o.where != "__init__" for o in self.model.objects.get(obj.name, ())):
                continue  # re-created outside __init__ (lazily, per worker)
            use = next((u for u in uses if u.attr == attr and u.method in reachable), None)
            if use is None:
                continue
            label = vocab().rng_objects[obj.callee]
            message = (f"`DataLoader` starts worker processes (`num_workers={workers}`) over `{klass}`, which "
                       f"creates `self.{attr}` (`{label}`) in `__init__`: every worker gets a copy in the same "
                       f"state and draws the identical \"random\" stream (true on {describe(version)} and every "
                       f"other version); reseed it per worker in a `worker_init_fn`")
            related = [Related(obj.node, f"`{klass}.{attr}` is created once, in the main process"),
                       Related(use.node, f"drawn from `self.{attr}` in every worker")]
            self.report(node, message, fix=self._fix(node, obj, attr), related=related)
            return True
        return False

    def _numpy_global(self, node: cst.Call, klass: str, workers: str, version) -> bool:
        lineage, reachable = lineage_of(self.model, klass), reachable_methods(self.model, klass)
        draw = next((d for d in self.model.of_classes("draws_of_class", lineage)
                     if d.library == "numpy" and d.method in reachable), None)
        if draw is None:
            return False
        message = (f"`DataLoader` with `num_workers={workers}` over `{klass}`, which draws from NumPy's global "
                   f"RNG (`{draw.name}`): on {describe(version)} workers do not reseed NumPy, so every worker "
                   f"produces the same numbers; pass a `worker_init_fn` that seeds NumPy per worker")
        self.report(node, message, related=[Related(draw.node, "drawn here in every worker")])
        return True

    def _check_constant_reseed(self, node: cst.Call, init_fn: cst.BaseExpression, version) -> None:
        if not isinstance(init_fn, cst.Name):
            return
        names = [init_fn.value] if self.model.function(init_fn.value) is not None else \
            self._functions_bound_to(init_fn.value)
        for name in names:
            if self._constant_reseed(node, name, version, init_fn.value):
                return

    def _functions_bound_to(self, name: str) -> list[str]:
        """The in-file functions a local name may hold where the loader is built: the bindings
        `name = function` that reach it on some path (`worker_init_fn = debugging_worker_init_fn`
        under an `if`, the parameter's value otherwise)."""
        function = self.walk.function
        if function is None:
            return []
        flow = self.scope().flow(function)
        statement = next((n for n in reversed(self.walk.stack) if flow.node_of(n) is not None), None)
        if statement is None:
            return []
        found = []
        for binding in flow.reaching(statement, name):
            value = binding.value if type(binding) is cst.Assign else None
            if isinstance(value, cst.Name) and self.model.function(value.value) is not None:
                found.append(value.value)
        return found

    def _constant_reseed(self, node: cst.Call, function: str, version, passed: str) -> bool:
        info = self.model.function(function)
        if info is None:
            return False
        for seed in self.model.seeds:
            if seed.function != info.qualname or seed.kind not in ("numpy", "random", "torch"):
                continue
            if not self._constant(seed.seed, info.params):
                continue
            held = f"`worker_init_fn={passed}`" if passed == function else \
                f"`worker_init_fn={passed}` (`{function}` where that binding reaches it)"
            message = (f"{held} reseeds every worker with the same constant "
                       f"(`{seed.name}({seed.seed})`): all workers draw identical random streams "
                       f"(on {describe(version)}); derive the seed from `torch.initial_seed()` or the worker id")
            reported = self.__dict__.setdefault("_reseeds", set())
            if id(seed.node) not in reported:  # one finding per worker_init_fn, where the fix goes
                reported.add(id(seed.node))
                self.report(seed.node, message, related=[Related(node, "the workers of this loader run it")])
            return True
        return False

    def _constant(self, text: str, params: tuple[str, ...]) -> bool:
        if not text:
            return False
        if text.lstrip("-").isdigit():
            return True
        return text in self.model.constants and not any(p in text for p in params)

    # -- recognising the call --

    def _is_dataloader(self, node: cst.Call) -> bool:
        qualified = self.names.qualify(node.func)
        if qualified is None or qualified.rsplit(".", 1)[-1] != "DataLoader" or "DataLoader" in self.model.classes:
            return False
        if qualified in vocab().dataloaders or qualified.startswith("torch_geometric."):
            return True
        return qualified == "DataLoader" and self.model.has_marker("seeding", "star-dataloader")

    def _is_zero(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Integer):
            return value.evaluated_value == 0
        return isinstance(value, cst.Name) and self.model.constants.get(value.value) == "0"

    # -- the fix: a worker_init_fn that re-creates the dataset's RNG per worker (unsafe: changes its stream) --

    def _fix(self, node: cst.Call, obj, attr: str) -> FixSpec | None:
        ctor = obj.node
        root = code(ctor.func).split(".")[0] if isinstance(ctor, cst.Call) else ""
        if self.names.imported(root) is None:
            return None  # the constructor's module is not importable at module level under that name
        torch_name, torch_import = module_reference(self.model, "torch")
        helper = free_name(self.model, "seed_worker")
        if vocab().rng_objects[obj.callee] == "torch.Generator":
            rebuilt = f"{code(ctor.func)}().manual_seed(info.seed)" if "manual_seed" not in code(ctor) \
                else f"{root}.Generator().manual_seed(info.seed)"
        else:
            rebuilt = f"{code(ctor.func)}(info.seed % 2**32)"
        lines = ([torch_import] if torch_import else []) + [
            "", "", f"def {helper}(worker_id):",
            f"    info = {torch_name}.utils.data.get_worker_info()",
            "    dataset = info.dataset",
            f"    while not hasattr(dataset, \"{attr}\") and hasattr(dataset, \"dataset\"):",
            "        dataset = dataset.dataset  # unwrap Subset",
            f"    dataset.{attr} = {rebuilt}  # each worker starts from a copy of the same state",
            "", ""]
        insert = insert_after_imports(self.model, lines)
        if insert is None:
            return None
        return FixSpec(f"Reseed `self.{attr}` per worker (`worker_init_fn={helper}`)",
                       (Replace(node, with_kwargs(node, [("worker_init_fn", helper)])), insert), safe=False)
