"""The file model: every block's facts merged, with the queries rules ask.

Built once per lint from the blocks' cached analyses (linear in the file);
`versions` numbers each fact category so that a block's cached rule results
are reused while the categories its rules read are unchanged."""

from __future__ import annotations

import functools
from typing import Callable, Hashable, Sequence

import libcst as cst

from .collect import BlockAnalysis
from .facts import CATEGORIES, CallSite, ClassInfo, Draw, FuncInfo, Marker, MethodUse, Obj, Seed
from ..walk import iter_nodes
from .names import Names, _qualify_dotted, dotted_name
from .summary import EMPTY_IMPORTS, ImportedFacts
from .vocab import vocab

# Object kinds a constructor makes (by qualified name).
_KIND_LISTS = (("softmax_modules", "softmax"), ("sigmoid_modules", "sigmoid"), ("dataloaders", "dataloader"),
               ("grad_scalers", "scaler"), ("sequential", "sequential"))


class FileModel:
    def __init__(self, names: Names, analyses: Sequence[BlockAnalysis], previous: "FileModel | None",
                 path: str = "", imported: ImportedFacts = EMPTY_IMPORTS) -> None:
        self.names = names
        # What the file reads from the rest of the project (project.py); a fact category of its
        # own, so that rules reading it run again when an imported summary changes.
        self.imported = imported
        self.path = path  # the linted file: its project's pins decide the torch version (environment.py)
        self.analyses = analyses
        merged: dict[str, list] = {key: [] for key in CATEGORIES}
        self.function_home: dict[str, tuple[FuncInfo, BlockAnalysis]] = {}
        for analysis in analyses:
            facts = analysis.facts
            for key in CATEGORIES:
                merged[key].extend(getattr(facts, key))
            for info in facts.functions:
                self.function_home.setdefault(info.qualname, (info, analysis))
        self.facts = {key: tuple(value) for key, value in merged.items()}
        self.facts["names"] = names.aliases  # type: ignore[assignment]
        self.facts["project"] = imported  # type: ignore[assignment]
        self.versions: dict[str, int] = {}
        for key, value in self.facts.items():
            old = previous.versions.get(key, 0) if previous is not None else 0
            same = previous is not None and previous.facts.get(key) == value
            self.versions[key] = old if same else old + 1
        self.classes: dict[str, ClassInfo] = {c.name: c for c in self.facts["classes"]}
        self.objects: dict[str, list[Obj]] = {}
        for obj in self.facts["objects"]:
            self.objects.setdefault(obj.name, []).append(obj)
        self.calls: dict[str, list[CallSite]] = {}
        for call in self.facts["calls"]:
            self.calls.setdefault(call.callee, []).append(call)
        self.constants = dict(self.facts["constants"])
        self.module_names = {name for top in self.facts["layout"] for name in top.names}
        # Filled by values.py, which owns how a value is computed: qualname -> the Value a
        # function returns, id(block analysis) -> the evaluator of that block's module-level names.
        self.summaries: dict[str, object] = {}
        self.memo: dict[Hashable, object] = {}  # file-wide conclusions rules draw once per lint (remembered)
        self.evaluators: dict[int, object] = {}
        self.global_defs: dict[str, list[BlockAnalysis]] = {}
        for index, analysis in enumerate(analyses):
            analysis.index = index
            for name, _ in analysis.facts.globals:
                homes = self.global_defs.setdefault(name, [])
                if not homes or homes[-1] is not analysis:
                    homes.append(analysis)

    def lint_done(self) -> None:
        """Forget the conclusions of this lint (kept: the facts and versions the next lint
        compares against). Training and Values (held in `memo`, `evaluators`) refer back to the model: left in place, that
        cycle keeps every parse tree alive until the cycle collector walks them all."""
        self.memo.clear()
        self.evaluators.clear()
        self.summaries.clear()

    def version_key(self, categories: Sequence[str]) -> tuple[int, ...]:
        return tuple(self.versions[c] for c in categories)

    def remembered(self, key: Hashable, compute: Callable[[], object]):
        """`compute()`, once per lint under `key` (a file-wide conclusion; None is kept too)."""
        try:
            return self.memo[key]
        except KeyError:
            found = self.memo[key] = compute()
            return found

    # -- classes -----------------------------------------------------------------------

    @functools.cached_property
    def model_classes(self) -> frozenset[str]:
        """The one definition of a model class: subclasses of nn.Module,
        LightningModule or PreTrainedModel, directly or through classes in the file."""
        return self._subclasses(vocab().model_bases, self._project_module)

    def _project_module(self, base: str) -> bool:
        """`base` is a class of another project file that is an nn.Module (directly or through
        its own project bases: the project index says so)."""
        if not self.imported:
            return False
        return self.imported.is_module(_qualify_dotted(base, self.names.imports))

    @functools.cached_property
    def dataset_classes(self) -> frozenset[str]:
        return self._subclasses(vocab().dataset_bases)

    def _subclasses(self, roots: frozenset[str], project=None) -> frozenset[str]:
        found: set[str] = set()
        changed = True
        while changed:
            changed = False
            for info in self.classes.values():
                if info.name in found:
                    continue
                if any(b in roots or b.rsplit(".", 1)[-1] in found or
                       (b in ("Module", "LightningModule") and any(r.endswith(b) for r in roots)) or
                       (project is not None and b.rsplit(".", 1)[-1] not in self.classes and project(b))
                       for b in info.bases):
                    found.add(info.name)
                    changed = True
        return frozenset(found)

    @functools.cached_property
    def step_functions(self) -> frozenset[str]:
        """In-file functions a framework's own loop calls once per batch, so that their body is
        a loop body: the step methods of LightningModule / HF Trainer subclasses, and the
        process functions handed to an ignite Engine."""
        found = {f.text for f in self.facts["program"] if isinstance(f, Marker) and f.kind == "step-fn"
                 and f.text in self.function_home}
        for base, methods in vocab().training_step_methods.items():
            for klass in self._subclasses(frozenset((base,))):
                found.update(f"{klass}.{m}" for m in methods if f"{klass}.{m}" in self.function_home)
        return frozenset(found)

    def is_unit_test(self, qualname: str) -> bool:
        """A test a test runner collects: named `test*` (or a method of a `Test*` class) and
        asserting something (`assert`, `self.assert*`, `pytest.*`, `*.testing.*`). A training
        script's `def test(model, loader)` evaluation loop is not one."""
        return self.remembered(("unit-test", qualname), lambda: _is_unit_test(self, qualname))

    # -- objects -----------------------------------------------------------------------

    def kind_of_callee(self, callee: str) -> str | None:
        """What calling `callee` builds: model | loss | optimizer | scheduler | scaler |
        dataloader | softmax | sigmoid | sequential | rng | dataset | None."""
        v = vocab()
        for key, kind in _KIND_LISTS:
            if callee in getattr(v, key):
                return kind
        if callee in v.rng_objects:
            return "rng"
        last = callee.rsplit(".", 1)[-1]
        if callee.startswith("torch.nn.") and last.endswith("Loss"):
            return "loss"
        if v.starts("scheduler_prefixes", callee):  # before the optimizers: torch.optim.swa_utils.SWALR
            return "scheduler"
        if v.starts("optimizer_prefixes", callee) and not v.starts("not_optimizers", callee):
            return "scheduler" if "lr_scheduler" in callee else "optimizer"
        if v.starts("model_constructors", callee) and not v.starts("not_model_constructors", callee):
            if callee.startswith("torch.nn.") and not last[:1].isupper() and callee not in v.module_returning_functions:
                return None  # a torch.nn function that is not a class: `_pair(3)` is a tuple of ints
            return "model"
        if callee.endswith(tuple(v.model_factory_suffixes)):  # AutoModel.from_pretrained, not a Pipeline's
            owner = callee.rsplit(".", 2)[-2] if callee.count(".") >= 1 else ""
            return "model" if v.pattern("model_class_pattern").search(owner) and \
                not v.pattern("not_model_class_pattern").search(owner) else None
        if last in self.model_classes:
            return "model"
        if last in self.dataset_classes:
            return "dataset"
        return self.imported.object_kind(callee) if self.imported else None

    def object(self, name: str, klass: str = "") -> Obj | None:
        """The object a module-level name or `self.attr` (of `klass`) holds, last binding wins."""
        if name.startswith("self."):
            own = self._last_of_owner.get((name, klass))
            if own is not None or klass:
                return own
        candidates = self.objects.get(name, ())
        return candidates[-1] if candidates else None

    @functools.cached_property
    def _last_of_owner(self) -> dict[tuple[str, str], Obj]:
        return {(obj.name, obj.owner): obj for obj in self.facts["objects"]}

    def project_fact(self, name: str, fact: str):
        """One fact of the summary (analysis/summary.py) of a function this file imports from
        another project file, called as its code spells it (`build`, `models.build`): falsy
        when unknown."""
        return self.imported.fact(_qualify_dotted(name, self.names.imports), fact) if self.imported and name \
            else None

    def project_evaluated_argument(self, name: str, position: int, keyword: str) -> str:
        """ImportedFacts.evaluated_argument of a function this file imports, called as its code spells it."""
        return self.imported.evaluated_argument(_qualify_dotted(name, self.names.imports), position, keyword) \
            if self.imported and name else ""

    def project_plain_function(self, name: str) -> bool:
        """`name` (as this file spells it) is a function of another project file whose summary
        says nothing: it trains, zeroes, seeds, draws, switches modes and keeps arguments in no state."""
        return bool(self.imported and name and self.imported.plain_function(_qualify_dotted(name, self.names.imports)))

    def project_seed_calls(self) -> list[tuple[cst.CSTNode, str]]:
        """(call, RNG) for each call here of a function of another project file that seeds a
        global RNG (its summary's `seeds`, through what it calls: `opt = parse_options()` that calls
        `set_random_seed`), the first call of each function."""
        if not self.imported:
            return []
        found = []
        for callee, sites in self.calls.items():
            seeds = self.project_fact(callee, "seeds") if sites else None
            for rng in seeds or ():
                found.append((sites[0].node, rng))
        return found

    def object_kind(self, name: str, klass: str = "") -> str | None:
        obj = self.object(name, klass)
        if obj is None and self.imported and not name.startswith("self."):  # `from models import net`
            found = self.imported.binding(_qualify_dotted(name, self.names.imports))
            return found.kind if found is not None else None
        return self.kind_of_callee(obj.callee) if obj is not None else None

    # -- functions ------------------------------------------------------------------------

    def bound_before(self, name: str, constructor: cst.Call) -> bool:
        """Is module-level `name` bound when the object built by `constructor` is? Objects
        built inside functions or classes are built later, when every module name is."""
        obj = self._objects_by_node.get(id(constructor))
        if obj is None or obj.where != "module":
            return True
        built = self._layout_index.get(id(obj.stmt))
        first = self._first_binding.get(name)
        if built is None:
            return first is not None
        return first is not None and first < built

    @functools.cached_property
    def _objects_by_node(self) -> dict[int, Obj]:
        found: dict[int, Obj] = {}
        for obj in self.facts["objects"]:
            found.setdefault(id(obj.node), obj)
        return found

    @functools.cached_property
    def _layout_index(self) -> dict[int, int]:
        """id(top-level statement) -> its position among the top-level statements (the first)."""
        found: dict[int, int] = {}
        for index, top in enumerate(self.facts["layout"]):
            found.setdefault(id(top.node), index)
        return found

    @functools.cached_property
    def _first_binding(self) -> dict[str, int]:
        """Module-level name -> position of the first top-level statement that binds it."""
        found: dict[str, int] = {}
        for index, top in enumerate(self.facts["layout"]):
            for bound in top.names:
                found.setdefault(bound, index)
        return found

    def function(self, name: str, klass: str = "") -> FuncInfo | None:
        """An in-file function by how it is called: `f` or `self.f` (in `klass`)."""
        if name.startswith("self."):
            found = self.function_home.get(f"{klass}.{name[5:]}")
        else:
            found = self.function_home.get(name)
        return found[0] if found else None

    def enclosing_function(self, node: cst.CSTNode) -> FuncInfo | None:
        """The innermost in-file function whose body holds `node`; None at module level."""
        return self.remembered("enclosing-function", self._enclosing_index).get(id(node))

    def _enclosing_index(self) -> dict[int, FuncInfo]:
        found: dict[int, FuncInfo] = {}
        for analysis in self.analyses:
            found.update(analysis.enclosing)
        return found

    def analysis_holding(self, function: cst.CSTNode) -> BlockAnalysis | None:
        """The block analysis of an in-file function (a FunctionDef of function_home)."""
        return self.remembered("function-analyses", lambda: {
            id(info.node): analysis for info, analysis in self.function_home.values()}).get(id(function))

    def call_sites(self, name: str, klass: str) -> "list[CallSite] | tuple[()]":
        """The in-file calls of function `name`, or of method `name` of `klass` (as `self.name(...)`)."""
        return self.calls.get(f"self.{name}" if klass else name, ())

    def only_called_without_grad(self, info: FuncInfo) -> bool:
        """Every in-file call of the function is inside no_grad/inference_mode."""
        if info.no_grad:
            return True
        sites = self.call_sites(info.name, info.klass)
        return bool(sites) and all(site.in_no_grad for site in sites)

    # -- randomness ------------------------------------------------------------------------

    @functools.cached_property
    def worker_fns(self) -> frozenset[str]:
        return frozenset(m.text for m in self.facts["seeding"] if isinstance(m, Marker) and m.kind == "worker-fn")

    @functools.cached_property
    def seeds(self) -> tuple[Seed, ...]:
        return tuple(s for s in self.facts["seeding"] if isinstance(s, Seed))

    @functools.cached_property
    def determinism_requests(self) -> tuple[cst.CSTNode, ...]:
        """Where the program asks for deterministic kernels: `cudnn.deterministic = True`,
        `torch.use_deterministic_algorithms(True)`."""
        return tuple(f.node for f in self.facts["seeding"]
                     if (isinstance(f, Marker) and f.kind == "deterministic") or
                     (isinstance(f, Seed) and f.kind == "determinism"))

    def in_worker(self, seed: Seed) -> bool:
        """The seed runs in a DataLoader worker: its function is a `worker_init_fn=` of this file, or reseeds
        from the worker's own seed (`torch.initial_seed()`, `get_worker_info()`), as a worker_init_fn passed
        from another file does; a function's name says nothing (`main_worker` is a spawned process's main)."""
        function = seed.function.rsplit(".", 1)[-1]
        if not function:
            return False
        if function in self.worker_fns:
            return True
        return self.remembered(("reads-worker-seed", seed.function), lambda: self._reads_worker_seed(seed.function))

    def _reads_worker_seed(self, qualname: str) -> bool:
        home = self.function_home.get(qualname)
        if home is None:
            return False
        sources = vocab().worker_seed_sources
        return any(type(node) is cst.Call and (self.names.qualify(node.func) or "") in sources
                   for node in iter_nodes(home[0].node))

    def has_marker(self, category: str, kind: str) -> bool:
        return (category, kind) in self._markers

    @functools.cached_property
    def _markers(self) -> frozenset[tuple[str, str]]:
        return frozenset((category, fact.kind) for category in CATEGORIES
                         for fact in self.facts[category] if isinstance(fact, Marker))

    def of_classes(self, index: str, classes: Sequence[str]) -> list:
        """The facts of `classes` in one of the per-class indexes below, in file order."""
        table = getattr(self, index)
        return self.remembered(("of_classes", index, tuple(classes)), lambda: [fact for _, fact in sorted(
            (entry for klass in dict.fromkeys(classes) for entry in table.get(klass, ())), key=lambda e: e[0])])

    # Per-class indexes of facts, for of_classes: (position in its category, fact).

    @functools.cached_property
    def method_uses(self) -> dict[str, list[tuple[int, MethodUse]]]:
        return _by_class(self.facts["seeding"], MethodUse, "klass")

    @functools.cached_property
    def draws_of_class(self) -> dict[str, list[tuple[int, Draw]]]:
        return _by_class(self.facts["seeding"], Draw, "klass")

    @functools.cached_property
    def objects_of_owner(self) -> dict[str, list[tuple[int, Obj]]]:
        return _by_class(self.facts["objects"], Obj, "owner")

    @functools.cached_property
    def last_import(self) -> cst.CSTNode | None:
        """The last top-level import statement."""
        return next((top.node for top in reversed(self.facts["layout"]) if top.is_import), None)


def _by_class(facts, kind: type, attr: str) -> dict[str, list]:
    found: dict[str, list] = {}
    for index, fact in enumerate(facts):
        if isinstance(fact, kind):
            found.setdefault(getattr(fact, attr), []).append((index, fact))
    return found


def dataset_classes_of(model: FileModel, values_scope, expr: cst.BaseExpression | None, at: int,
                       klass: str, depth: int = 0) -> list[str]:
    """In-file classes of the dataset `expr` evaluates to, through local names,
    module-level names, `self.` attributes and Subset/random_split/ConcatDataset."""
    if expr is None or depth > 4:
        return []
    if isinstance(expr, cst.Call):
        callee = model.names.qualify(expr.func) or ""
        if callee in vocab().dataset_wrappers:
            inner = expr.args[0].value if expr.args else None
            if isinstance(inner, (cst.List, cst.Tuple)):
                return [c for e in inner.elements for c in
                        dataset_classes_of(model, values_scope, e.value, at, klass, depth + 1)]
            return dataset_classes_of(model, values_scope, inner, at, klass, depth + 1)
        last = callee.rsplit(".", 1)[-1]
        return [last] if last in model.classes else []
    if isinstance(expr, cst.Subscript):
        return dataset_classes_of(model, values_scope, expr.value, at, klass, depth + 1)
    name = dotted_name(expr)
    if name is None:
        return []
    definition = values_scope.lookup(name, at)
    if definition is not None and definition.value is not None:
        return dataset_classes_of(model, values_scope, definition.value, definition.order - 1, klass, depth + 1)
    obj = model.object(name, klass)
    if obj is not None and obj.node is not None:
        return dataset_classes_of(model, values_scope, obj.node, at, klass, depth + 1)  # type: ignore[arg-type]
    return []


def reachable_methods(model: FileModel, klass: str,
                      roots: tuple[str, ...] = ("__getitem__", "__getitems__", "__iter__")) -> set[str]:
    """Methods of `klass` (and its in-file bases) reachable from `roots` (a dataset's
    __getitem__/__iter__, a model's forward) via `self.` calls. Memoized per lint: do not
    change the set returned."""
    return model.remembered(("reachable_methods", klass, roots), lambda: _reachable_methods(model, klass, roots))


def _reachable_methods(model: FileModel, klass: str, roots: tuple[str, ...]) -> set[str]:
    lineage = lineage_of(model, klass)
    # in file order: the order they are found in is the order of the set
    uses = model.of_classes("method_uses", lineage)
    reachable = set(roots)
    changed = True
    while changed:
        changed = False
        for use in uses:
            if use.method in reachable and use.attr not in reachable and \
                    any(f"{c}.{use.attr}" in model.function_home for c in lineage):
                reachable.add(use.attr)
                changed = True
    return reachable


def lineage_of(model: FileModel, klass: str) -> list[str]:
    """`klass` and its in-file bases (at most 8), nearest first. Memoized per lint: do not
    change the list returned."""
    return model.remembered(("lineage_of", klass), lambda: _lineage_of(model, klass))


def lineage_members(model: FileModel, klass: str) -> list[str]:
    """The in-file classes whose lineage includes `klass` (itself included), in file order."""
    return model.remembered("lineage_members", lambda: _lineage_members(model)).get(klass, [])


def _lineage_members(model: FileModel) -> dict[str, list[str]]:
    members: dict[str, list[str]] = {}
    for other in model.classes:
        for base in lineage_of(model, other):
            members.setdefault(base, []).append(other)
    return members


def _lineage_of(model: FileModel, klass: str) -> list[str]:
    lineage, todo = [], [klass]
    while todo and len(lineage) < 8:
        current = todo.pop(0)
        if current in lineage or current not in model.classes:
            continue
        lineage.append(current)
        todo.extend(b.rsplit(".", 1)[-1] for b in model.classes[current].bases)
    return lineage


def _is_unit_test(model: FileModel, qualname: str) -> bool:
    found = model.function_home.get(qualname)
    if found is None:
        return False
    info = found[0]
    if not (info.name.startswith("test") or info.klass.startswith("Test")):
        return False
    for node in iter_nodes(info.node):
        if type(node) is cst.Assert:
            return True
        if type(node) is cst.Call:
            callee = model.names.qualify(node.func) or dotted_name(node.func) or ""
            last = callee.rsplit(".", 1)[-1]
            if last.startswith("assert") or callee.startswith("pytest.") or ".testing." in callee:
                return True
    return False
