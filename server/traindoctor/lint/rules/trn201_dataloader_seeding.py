"""TRN201 unseeded-dataloader-workers and TRN202 incomplete-seeding.

Both rules read one set of file-wide facts, gathered by `SeedingCollector`:
where the program seeds which RNG, where it draws random numbers from which
library, which dataset classes draw random numbers in `__getitem__` (or hold
their own RNG object), and what names are bound to which dataset.

TRN201: a multi-worker `DataLoader` without `worker_init_fn`/`generator` in a
program that wants reproducibility, or over a dataset that draws random numbers.
TRN202: a program that seeds some RNGs (torch, numpy, random) but draws from
another one that it never seeds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple
import libcst as cst

from ..context import FileFacts, dotted_name
from ..rule import FactCollector, FixSpec, InsertAfter, InsertBefore, Invalid, Related, Replace, Rule

# --- vocabulary ------------------------------------------------------------------

_DATALOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
# Positions of DataLoader's parameters (torch.utils.data.DataLoader.__init__).
_POS_NUM_WORKERS, _POS_WORKER_INIT_FN, _POS_GENERATOR = 5, 10, 12

# Libraries whose seed helpers seed python, numpy and torch (CPU and all GPUs).
_SEED_ALL_LIBRARIES = {
    "lightning", "pytorch_lightning", "lightning_fabric", "transformers", "accelerate",
    "mmengine", "mmcv", "mmdet", "monai", "detectron2", "ignite", "fastai", "timm",
    "deepspeed", "composer", "pytorch_lightning_bolts", "catalyst", "torchtnt",
}
# Frameworks whose seeds do not touch torch/numpy/random at all.
_FOREIGN_LIBRARIES = {"tensorflow", "tf", "jax", "keras", "paddle", "mindspore"}

_SEED_HELPER = re.compile(
    r"^(?:"
    r"(?:set|fix|fixed|setup|set_up|init|initialize|reset|apply|make|configure|same|global)_?"
    r"(?:all_|random_|global_|torch_|the_|rng_|experiment_)?seeds?"
    r"(?:_everything|_all|_torch|_rngs?|_random|_everywhere|_globally)?"
    r"|seed_?(?:everything|all|torch|rngs?|random|everywhere|experiment)"
    r"|(?:set|make|enable|use)_?(?:full_)?determinis(?:m|tic)(?:_mode)?"
    r")$"
)

_NUMPY_NOT_DRAWS = {
    "seed", "RandomState", "default_rng", "Generator", "SeedSequence", "PCG64", "PCG64DXSM",
    "MT19937", "Philox", "SFC64", "BitGenerator", "get_state", "set_state",
    "get_bit_generator", "set_bit_generator",
}
_RANDOM_DRAWS = {
    "random", "randint", "randrange", "choice", "choices", "shuffle", "sample", "uniform",
    "gauss", "normalvariate", "lognormvariate", "expovariate", "vonmisesvariate",
    "gammavariate", "betavariate", "paretovariate", "weibullvariate", "triangular",
    "getrandbits", "randbytes", "binomialvariate",
}
_TORCH_DRAWS = {
    "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
    "normal", "bernoulli", "multinomial", "poisson",
}
_TORCH_RANDOM_LAYERS = {
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
    "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
    "ConvTranspose2d", "ConvTranspose3d", "Embedding", "EmbeddingBag", "LSTM", "GRU", "RNN",
    "LSTMCell", "GRUCell", "RNNCell", "MultiheadAttention", "Transformer",
    "TransformerEncoderLayer", "TransformerDecoderLayer", "RReLU",
}
_TENSOR_DRAW_METHODS = {
    "uniform_", "normal_", "bernoulli_", "random_", "exponential_", "cauchy_",
    "log_normal_", "geometric_",
}
_NOT_INIT_DRAWS = {"calculate_gain", "zeros_", "ones_", "constant_", "eye_", "dirac_"}
_OWN_RNG_TYPES = {
    "numpy.random.RandomState": "np.random.RandomState",
    "numpy.random.default_rng": "np.random.default_rng",
    "numpy.random.Generator": "np.random.Generator",
    "random.Random": "random.Random",
    "torch.Generator": "torch.Generator",
}
_DATASET_WRAPPERS = {
    "torch.utils.data.Subset", "torch.utils.data.random_split",
    "torch.utils.data.ConcatDataset", "torch.utils.data.dataset.Subset",
}

_PORT = re.compile(r"\bport\b|_port\b|\bport_")


def _last(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _is_false(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _kwarg(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def _arg(call: cst.Call, name: str, position: int | None) -> cst.BaseExpression | None:
    found = _kwarg(call, name)
    if found is not None:
        return found.value
    if position is not None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if position < len(positional):
            return positional[position].value
    return None


def classify_seed(qualified: str, call: cst.Call) -> str | None:
    """What a seeding call seeds: torch | cuda | cuda_all | numpy | random |
    all (a library helper) | helper (a helper whose body may be elsewhere) |
    determinism (intent only); None when it is not global seeding."""
    if qualified in ("torch.manual_seed", "torch.random.manual_seed"):
        return "torch"
    if qualified == "torch.cuda.manual_seed":
        return "cuda"
    if qualified in ("torch.cuda.manual_seed_all", "torch.cuda.random.manual_seed_all"):
        return "cuda_all"
    if qualified == "numpy.random.seed":
        return "numpy"
    if qualified == "random.seed":
        return "random"
    if qualified == "torch.use_deterministic_algorithms":
        first = _arg(call, "mode", 0)
        return None if first is None or _is_false(first) else "determinism"
    root, last = qualified.split(".")[0], _last(qualified)
    if root in _FOREIGN_LIBRARIES:
        return None
    if not _SEED_HELPER.match(last.lower()):
        return None
    if root in _SEED_ALL_LIBRARIES:
        return "all"
    return "helper"


def draw_library(qualified: str, call: cst.Call) -> str | None:
    """The library whose global RNG this call draws from, if any."""
    parts = qualified.split(".")
    if len(parts) >= 3 and parts[0] == "numpy" and parts[1] == "random":
        return None if parts[2] in _NUMPY_NOT_DRAWS or len(parts) > 3 else "numpy"
    if len(parts) == 2 and parts[0] == "random" and parts[1] in _RANDOM_DRAWS:
        return "random"
    if parts[0] == "torch":
        if len(parts) == 2 and parts[1] in _TORCH_DRAWS:
            return "torch"
        if qualified.startswith("torch.nn.init.") and parts[-1] not in _NOT_INIT_DRAWS:
            return "torch"
        if qualified.startswith("torch.nn.functional.") and "dropout" in parts[-1]:
            return "torch"
        if len(parts) == 3 and parts[1] == "nn" and parts[2] in _TORCH_RANDOM_LAYERS:
            return "torch"
        if qualified in ("torch.utils.data.random_split", "torch.utils.data.RandomSampler"):
            return None if _kwarg(call, "generator") else "torch"
        if qualified in _DATALOADERS:
            shuffle = _arg(call, "shuffle", 2)
            if shuffle is not None and not _is_false(shuffle) and _arg(call, "generator", _POS_GENERATOR) is None:
                return "torch"
            return None
    if random_transform(qualified, call):
        return "torch"
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in _TENSOR_DRAW_METHODS:
        return "torch"
    return None


def random_transform(qualified: str, call: cst.Call) -> bool:
    """torchvision `Random*` transforms and albumentations transforms applied
    with a probability: they draw random numbers when applied."""
    parts = qualified.split(".")
    if parts[0] == "torchvision" and "transforms" in parts and parts[-1].startswith(("Random", "ColorJitter", "AutoAugment", "RandAugment", "TrivialAugment", "AugMix", "ElasticTransform")):
        return True
    if parts[0] == "albumentations" and parts[-1] not in ("Compose", "OneOf", "Normalize", "Resize", "ToTensorV2", "ToFloat", "LongestMaxSize", "PadIfNeeded", "CenterCrop"):
        p = _kwarg(call, "p")
        if p is None:
            return parts[-1].startswith("Random")
        return not (isinstance(p.value, (cst.Integer, cst.Float)) and float(p.value.value) in (0.0,))
    return False


# --- facts -----------------------------------------------------------------------
# Records are NamedTuples: hashable, and the engine finds the nodes inside
# tuples to locate related nodes and fix anchors that live in other blocks.


class SeedCall(NamedTuple):
    kind: str  # see classify_seed
    call: cst.Call
    name: str  # as qualified
    stmt: cst.SimpleStatementLine | None  # where missing seed calls can go
    function: cst.FunctionDef | None
    workers: bool = False  # Lightning's seed_everything(workers=True)
    in_worker: bool = False  # inside a worker_init_fn: seeds a worker, not the program


class Draw(NamedTuple):
    library: str
    call: cst.Call
    name: str


class MethodFact(NamedTuple):
    """Something seen inside a method of a class."""

    klass: cst.ClassDef
    method: str
    what: str  # "draw" | "self_call" | "name_call"
    detail: str  # the drawing function, or the attribute / name called
    node: cst.CSTNode


class AttrBinding(NamedTuple):
    """`self.attr = <call>` inside a class: an own RNG object or a random transform."""

    klass: cst.ClassDef
    attr: str
    kind: str  # "rng" | "transform"
    label: str
    node: cst.CSTNode
    method: str  # where it is assigned: an RNG made in `__init__` is copied to every worker


class Binding(NamedTuple):
    """`target = <call>`: resolves names passed to DataLoader to datasets."""

    scope: cst.CSTNode | None  # the enclosing function, class (for self.x) or None
    target: str
    value: cst.BaseExpression
    index: int | None  # position in a tuple target (`train, val = random_split(...)`)


def _assign_targets(node: cst.CSTNode) -> list[cst.BaseExpression]:
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    if isinstance(node, cst.AnnAssign) and node.value is not None:
        return [node.target]
    return []


class SeedingCollector(FactCollector):
    def visit_Module(self, node: cst.Module) -> None:
        for index, stmt in enumerate(node.body):
            self.add("trn201.top", stmt)
            # Blank lines before a block's first statement live in the module header.
            lines = (list(node.header) if index == 0 else []) + list(stmt.leading_lines)
            blanks = 0
            for line in reversed(lines):
                if line.comment is not None:
                    break
                blanks += 1
            self.add("trn201.blanks", (stmt, blanks))
            if isinstance(stmt, cst.SimpleStatementLine) and any(
                isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
            ):
                self.add("trn201.import", stmt)
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if (isinstance(small, cst.Assign) and len(small.targets) == 1
                            and isinstance(small.targets[0].target, cst.Name)
                            and isinstance(small.value, cst.Integer)):
                        self.add("trn201.const", (small.targets[0].target.value, small.value.evaluated_value))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar) and node.module is not None:
            module = dotted_name(node.module) or ""
            if module in ("torch.utils.data", "torch.utils.data.dataloader"):
                self.add("trn201.star_dataloader")

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        bases = tuple(dotted_name(b.value) or "" for b in node.bases)
        self.add("trn201.class", (node.name.value, node, bases))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        name = node.name.value
        if len(self.walk.stack) == 2 and name == "seed_worker":  # a top-level def
            self.add("trn201.seed_worker", name)
        if _SEED_HELPER.match(name.lower()):
            self.add("trn202.helper_def", name)
        for param in node.params.params:
            if param.name.value == "g":
                self.add("trn201.g_taken", True)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if "PL_SEED_WORKERS" in node.value:
            self.add("trn201.workers_seeded", True)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._binding(node)
        for target in node.targets:
            # torch.backends.cudnn.deterministic = True
            if (isinstance(target.target, cst.Attribute) and target.target.attr.value == "deterministic"
                    and isinstance(node.value, cst.Name) and node.value.value == "True"):
                qualified = self.facts.qualify(target.target) or ""
                if "cudnn" in qualified:
                    self.add("trn2.seed", SeedCall("determinism", node.value, qualified, None, None))  # type: ignore[arg-type]
            if isinstance(target.target, cst.Name) and target.target.value == "g":
                self.add("trn201.g_taken", True)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._binding(node)

    def _binding(self, node: cst.Assign | cst.AnnAssign) -> None:
        value = node.value
        if not isinstance(value, cst.Call):
            return
        klass, function = self.walk.klass, self.walk.function
        for target in _assign_targets(node):
            targets: list[tuple[cst.BaseExpression, int | None]]
            if isinstance(target, (cst.Tuple, cst.List)):
                targets = [(el.value, i) for i, el in enumerate(target.elements)]
            else:
                targets = [(target, None)]
            for expr, index in targets:
                name = dotted_name(expr)
                if name is None:
                    continue
                if name.startswith("self.") and klass is not None:
                    self.add("trn201.bind", Binding(klass, name, value, index))
                    attr = name.split(".")[1]
                    self._attr_binding(klass, attr, value)
                else:
                    self.add("trn201.bind", Binding(function, name, value, index))
                    if isinstance(expr, cst.Name) and function is None and _contains_random_transform(self.facts, value):
                        self.add("trn201.random_name", name)
                if (self.facts.qualify(value.func) or "") == "torch.Generator":
                    self.add("trn201.generator", (function, name))

    def _attr_binding(self, klass: cst.ClassDef, attr: str, value: cst.Call) -> None:
        method = self.walk.function.name.value if self.walk.function is not None else ""
        func = value.func
        # torch.Generator().manual_seed(0) returns the generator
        if isinstance(func, cst.Attribute) and func.attr.value == "manual_seed" and isinstance(func.value, cst.Call):
            func = func.value.func
        qualified = self.facts.qualify(func) or ""
        if qualified in _OWN_RNG_TYPES:
            self.add("trn201.attr", AttrBinding(klass, attr, "rng", _OWN_RNG_TYPES[qualified], value, method))
        elif _contains_random_transform(self.facts, value):
            self.add("trn201.attr", AttrBinding(klass, attr, "transform", qualified, value, method))

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.facts.qualify(node.func)
        if qualified is None:
            return
        kind = classify_seed(qualified, node)
        if kind is not None:
            stmt = self._statement()
            workers = False
            if kind == "all" and _last(qualified) == "seed_everything":
                flag = _arg(node, "workers", 1)
                workers = flag is not None and not _is_false(flag)
            function = self.walk.function
            in_worker = function is not None and "worker" in function.name.value.lower()
            self.add("trn2.seed", SeedCall(kind, node, qualified, stmt, function, workers, in_worker))
            return
        if _last(qualified) == "DataLoader":
            init_fn = _arg(node, "worker_init_fn", _POS_WORKER_INIT_FN)
            if isinstance(init_fn, cst.Name):
                self.add("trn201.worker_fn", init_fn.value)
        library = draw_library(qualified, node)
        if library is not None and not (library != "torch" and self._picks_a_port()):
            self.add("trn2.draw", Draw(library, node, qualified))
        function, klass = self.walk.function, self.walk.klass
        if function is None or klass is None or self._is_model_class(klass):
            return
        method = function.name.value
        if library is not None:
            self.add("trn201.method", MethodFact(klass, method, "draw", qualified, node))
        # self.augment(x), self.rng.random(), self.transform(img)
        func = node.func
        while isinstance(func, cst.Attribute) and isinstance(func.value, cst.Attribute):
            func = func.value
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            self.add("trn201.method", MethodFact(klass, method, "self_call", func.attr.value, node))
        elif isinstance(node.func, cst.Name):
            self.add("trn201.method", MethodFact(klass, method, "name_call", node.func.value, node))
        for arg in node.args:  # torch.randint(..., generator=self.gen), shuffle(x, random_state=self.rs)
            if (arg.keyword is not None and arg.keyword.value in ("generator", "rng", "random_state")
                    and isinstance(arg.value, cst.Attribute) and isinstance(arg.value.value, cst.Name)
                    and arg.value.value.value == "self"):
                self.add("trn201.method", MethodFact(klass, method, "self_call", arg.value.attr.value, node))

    def _is_model_class(self, klass: cst.ClassDef) -> bool:
        """Models (nn.Module, LightningModule) are not datasets; skipping them
        keeps the records small (their forward calls many self.layers)."""
        cache = self.__dict__.setdefault("_model_classes", {})
        if klass not in cache:
            cache[klass] = any(
                (self.facts.qualify(base.value) or "").endswith(("nn.Module", "LightningModule"))
                for base in klass.bases
            )
        return cache[klass]

    def _picks_a_port(self) -> bool:
        """`port = random.randint(20000, 30000)`: a free port, not training randomness."""
        stmt = self._statement()
        return stmt is not None and _PORT.search(cst.Module([]).code_for_node(stmt).lower()) is not None

    def _statement(self) -> cst.SimpleStatementLine | None:
        for ancestor in reversed(self.walk.stack):
            if isinstance(ancestor, cst.SimpleStatementLine):
                return ancestor
            if isinstance(ancestor, (cst.BaseCompoundStatement, cst.Lambda, cst.SimpleStatementSuite)):
                return None
        return None


def _contains_random_transform(facts: FileFacts, value: cst.BaseExpression) -> bool:
    """A transform pipeline with a random step, e.g. `T.Compose([T.RandomCrop(32), ...])`."""
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> bool:
            nonlocal found
            if random_transform(facts.qualify(call.func) or "", call):
                found = True
            return not found

    value.visit(Finder())
    return found


# --- what the facts say ------------------------------------------------------------


class _Program:
    """File-wide view derived from the collector's records."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        worker_fns = set(facts.get("trn201.worker_fn"))
        self.seeds: list[SeedCall] = [
            s._replace(in_worker=True) if s.function is not None and s.function.name.value in worker_fns else s
            for s in facts.get("trn2.seed") if isinstance(s, SeedCall)
        ]
        self.draws: list[Draw] = [d for d in facts.get("trn2.draw") if isinstance(d, Draw)]
        self.helper_defs = set(facts.get("trn202.helper_def"))

    def reproducibility_intent(self) -> SeedCall | None:
        """The first seed call or determinism switch, if the program has one."""
        return self.seeds[0] if self.seeds else None

    def workers_seeded_by_framework(self) -> bool:
        return self.facts.has("trn201.workers_seeded") or any(s.workers for s in self.seeds)

    def seeds_everything(self) -> bool:
        """A library helper, or a helper whose body is not in this file."""
        for seed in self.seeds:
            if seed.kind == "all":
                return True
            if seed.kind == "helper" and _last(seed.name) not in self.helper_defs:
                return True
        return False


@dataclass(frozen=True)
class DatasetRandomness:
    class_name: str
    draw: cst.CSTNode  # where __getitem__ (or a method it calls) draws random numbers
    what: str
    own_rng: AttrBinding | None = None
    via_transform: bool = False  # a random transform passed to the dataset


def _dataset_randomness(facts: FileFacts, klass: cst.ClassDef) -> DatasetRandomness | None:
    classes = {name: node for name, node, _ in facts.get("trn201.class")}  # type: ignore[misc]
    bases_of = {node: bases for _, node, bases in facts.get("trn201.class")}  # type: ignore[misc]
    # The class and its bases defined in this file, subclass first.
    lineage: list[cst.ClassDef] = []
    todo = [klass]
    while todo and len(lineage) < 8:
        current = todo.pop(0)
        if current in lineage:
            continue
        lineage.append(current)
        todo.extend(classes[_last(b)] for b in bases_of.get(current, ()) if _last(b) in classes)
    methods: list[MethodFact] = [m for m in facts.get("trn201.method") if isinstance(m, MethodFact) and m.klass in lineage]
    attrs: list[AttrBinding] = [a for a in facts.get("trn201.attr") if isinstance(a, AttrBinding) and a.klass in lineage]
    random_names = set(facts.get("trn201.random_name"))
    method_names = {fact.method for fact in methods}
    # Methods reachable from __getitem__ through self.method(...) calls.
    reachable = {"__getitem__", "__getitems__", "__iter__"}  # map- and iterable-style datasets
    changed = True
    while changed:
        changed = False
        for fact in methods:
            if fact.what == "self_call" and fact.method in reachable and fact.detail in method_names and fact.detail not in reachable:
                reachable.add(fact.detail)
                changed = True
    # An RNG re-created outside __init__ (lazily, per worker) is not a shared copy.
    recreated = {a.attr for a in attrs if a.method != "__init__"}
    rngs = {a.attr: a for a in attrs if a.kind == "rng" and a.method == "__init__" and a.attr not in recreated}
    transforms = {a.attr: a for a in attrs if a.kind == "transform"}
    first: DatasetRandomness | None = None
    name = klass.name.value
    for fact in methods:
        if fact.method not in reachable:
            continue
        if fact.what == "self_call" and fact.detail in rngs:
            return DatasetRandomness(name, fact.node, f"self.{fact.detail}", rngs[fact.detail])
        if first is not None:
            continue
        if fact.what == "draw":
            first = DatasetRandomness(name, fact.node, fact.detail)
        elif fact.what == "self_call" and fact.detail in transforms:
            first = DatasetRandomness(name, fact.node, f"self.{fact.detail}")
        elif fact.what == "name_call" and fact.detail in random_names:
            first = DatasetRandomness(name, fact.node, fact.detail)
    return first


def _bindings(facts: FileFacts, name: str, function: cst.FunctionDef | None,
              klass: cst.ClassDef | None) -> list[Binding]:
    """Assignments to `name`, those visible from the current scope first."""
    bindings = [b for b in facts.get("trn201.bind") if isinstance(b, Binding) and b.target == name]
    if name.startswith("self."):
        preferred = [b for b in bindings if b.scope is klass]
    else:
        preferred = [b for b in bindings if b.scope is function] or [b for b in bindings if b.scope is None]
    return preferred or bindings


def _resolve_dataset(facts: FileFacts, expr: cst.BaseExpression | None, function: cst.FunctionDef | None,
                     klass: cst.ClassDef | None, depth: int = 0) -> list[cst.Call]:
    """The calls that construct the dataset `expr` evaluates to (through
    names, `self.` attributes, `Subset`/`random_split`/`ConcatDataset`)."""
    if expr is None or depth > 4:
        return []
    if isinstance(expr, cst.Call):
        qualified = facts.qualify(expr.func) or ""
        if qualified in _DATASET_WRAPPERS:
            inner = _arg(expr, "dataset", 0) or _arg(expr, "datasets", 0)
            if isinstance(inner, (cst.List, cst.Tuple)):
                found: list[cst.Call] = []
                for element in inner.elements:
                    found.extend(_resolve_dataset(facts, element.value, function, klass, depth + 1))
                return found
            return _resolve_dataset(facts, inner, function, klass, depth + 1)
        return [expr]
    if isinstance(expr, cst.Subscript):  # datasets["train"] / random_split(...)[0]
        return _resolve_dataset(facts, expr.value, function, klass, depth + 1)
    name = dotted_name(expr)
    if name is None:
        return []
    found = []
    for binding in _bindings(facts, name, function, klass):
        found.extend(_resolve_dataset(facts, binding.value, function, klass, depth + 1))
    return found


def _constructed_randomness(facts: FileFacts, construct: cst.Call, function: cst.FunctionDef | None,
                            klass: cst.ClassDef | None) -> DatasetRandomness | None:
    """Randomness of the dataset built by `construct`: its class's
    `__getitem__` (class in this file), or a random transform handed to it
    (`ImageFolder(root, transform=train_tf)`)."""
    classes = {name: node for name, node, _ in facts.get("trn201.class")}  # type: ignore[misc]
    callee = dotted_name(construct.func) or ""
    if _last(callee) in classes:
        found = _dataset_randomness(facts, classes[_last(callee)])
        if found is not None:
            return found
    for arg in construct.args:
        value = arg.value
        name = dotted_name(value)
        candidates = [b.value for b in _bindings(facts, name, function, klass)] if name else [value]
        for candidate in candidates:
            if isinstance(candidate, cst.Call) and _contains_random_transform(facts, candidate):
                label = name or _last(facts.qualify(candidate.func) or "transform")
                return DatasetRandomness(_last(callee) or "the dataset", candidate, label, via_transform=True)
    return None


# --- TRN201 --------------------------------------------------------------------------


_TRN201_INVALID = [
    # global seed + workers
    "import torch\nfrom torch.utils.data import DataLoader\n\ntorch.manual_seed(0)\n"
    "loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=4)\n",
    # aliased import, num_workers from args, user seed helper
    "import random\nimport numpy as np\nimport torch\nfrom torch.utils.data import DataLoader as DL\n\n"
    "def set_seed(s):\n    random.seed(s); np.random.seed(s); torch.manual_seed(s)\n"
    "def build(args):\n    set_seed(args.seed)\n    return DL(ds, batch_size=args.bs, num_workers=args.workers)\n",
    # dataset holds its own RNG: the worst case, no seeds anywhere
    "import numpy as np\nimport torch\nfrom torch.utils.data import Dataset, DataLoader\n\n"
    "class Noisy(Dataset):\n    def __init__(self, data):\n        self.data = data\n"
    "        self.rng = np.random.RandomState(0)\n    def __getitem__(self, i):\n"
    "        return self.data[i] + self.rng.normal()\n"
    "loader = DataLoader(Noisy(data), batch_size=4, num_workers=4)\n",
    # cudnn.deterministic as intent; torch.utils.data module alias
    "import os\nimport torch\nimport torch.utils.data as tud\ntorch.backends.cudnn.deterministic = True\n"
    "torch.backends.cudnn.benchmark = False\n"
    "loader = tud.DataLoader(ds, batch_size=16, num_workers=os.cpu_count())\n",
    # Lightning seed_everything without workers=True, inside a LightningDataModule
    "import torch\nimport pytorch_lightning as pl\nfrom torch.utils.data import DataLoader\n"
    "pl.seed_everything(7)\nloader = DataLoader(ds, num_workers=2)\n",
    # dataset resolved through a name; __getitem__ draws through a helper method
    "import random\nimport torch\nfrom torch.utils.data import Dataset, DataLoader\n\n"
    "class Crops(Dataset):\n    def __init__(self, images):\n        self.images = images\n"
    "    def __len__(self):\n        return len(self.images)\n    def _crop(self, img):\n"
    "        x = random.randint(0, 8)\n        return img[:, x:x + 24]\n"
    "    def __getitem__(self, i):\n        return self._crop(self.images[i])\n\n"
    "def main():\n    train_set = Crops(torch.rand(10, 3, 32, 32))\n"
    "    loader = DataLoader(train_set, batch_size=2, num_workers=2)\n",
    # self.dataset in a DataModule, random transform built in the dataset
    "import torch\nimport torchvision.transforms as T\nfrom torch.utils.data import Dataset, DataLoader\n\n"
    "class Images(Dataset):\n    def __init__(self, x):\n        self.x = x\n"
    "        self.aug = T.Compose([T.RandomHorizontalFlip(), T.ToTensor()])\n"
    "    def __getitem__(self, i):\n        return self.aug(self.x[i])\n\n"
    "class Data:\n    def setup(self):\n        self.train = Images(load())\n"
    "    def train_dataloader(self):\n        return DataLoader(self.train, num_workers=4)\n",
    # a torch.Generator owned by the dataset, used through generator=
    "import numpy as np\nimport torch\nfrom torch.utils.data import Dataset, DataLoader\n\n"
    "class Masks(Dataset):\n    def __init__(self):\n        self.gen = torch.Generator().manual_seed(0)\n"
    "    def __getitem__(self, i):\n        return torch.randint(0, 9, (1,), generator=self.gen)\n"
    "loader = DataLoader(Masks(), num_workers=2)\n",
]


class UnseededDataLoaderWorkers(Rule):
    CODE = "TRN201"
    Collector = SeedingCollector

    def visit_Call(self, node: cst.Call) -> None:
        if not self._is_dataloader(node):
            return
        if any(arg.star for arg in node.args):
            return  # **kwargs may carry worker_init_fn / generator
        workers = _arg(node, "num_workers", _POS_NUM_WORKERS)
        if workers is None or self._is_zero(workers):
            return
        for name, position in (("worker_init_fn", _POS_WORKER_INIT_FN), ("generator", _POS_GENERATOR)):
            value = _arg(node, name, position)
            if value is not None and not _is_none(value):
                return
        program = _Program(self.facts)
        if program.workers_seeded_by_framework():
            return
        intent = program.reproducibility_intent()
        dataset_expr = _arg(node, "dataset", 0)
        randomness = None
        for construct in _resolve_dataset(self.facts, dataset_expr, self.walk.function, self.walk.klass):
            randomness = _constructed_randomness(self.facts, construct, self.walk.function, self.walk.klass)
            if randomness is not None:
                break
        if intent is None and randomness is None:
            return
        workers_text = _code(workers)
        related: list[Related] = []
        if randomness is not None and randomness.own_rng is not None:
            rng = randomness.own_rng
            message = (
                f"`DataLoader` starts worker processes (`num_workers={workers_text}`) without `worker_init_fn`: "
                f"each worker gets a copy of `{randomness.class_name}.{rng.attr}` (`{rng.label}` created in "
                f"`__init__`) in the same state, so every worker produces identical \"random\" augmentations, "
                f"on every PyTorch version; `seed_worker` must also reseed `self.{rng.attr}` per worker "
                f"(through `torch.utils.data.get_worker_info().dataset`)"
            )
            related.append(Related(rng.node, f"`{randomness.class_name}.{rng.attr}` is created once, in the main process"))
            related.append(Related(randomness.draw, f"`__getitem__` draws from `self.{rng.attr}` in every worker"))
        elif randomness is not None and randomness.via_transform:
            message = (
                f"`DataLoader` with `num_workers={workers_text}` and no `worker_init_fn` or `generator` over "
                f"`{randomness.class_name}` with the random transform `{randomness.what}`: the workers' random "
                f"streams are not under the program's control, so augmentations change from run to run"
            )
            related.append(Related(randomness.draw, f"`{randomness.what}` draws random numbers in every worker"))
        elif randomness is not None:
            message = (
                f"`DataLoader` with `num_workers={workers_text}` and no `worker_init_fn` or `generator` over "
                f"`{randomness.class_name}`, whose `__getitem__` draws random numbers (`{randomness.what}`): "
                f"the workers' random streams are not under the program's control, so augmentations change "
                f"from run to run (and numpy draws repeat across workers on PyTorch < 1.9)"
            )
            related.append(Related(randomness.draw, f"`{randomness.class_name}.__getitem__` draws random numbers here"))
        else:
            message = (
                f"`DataLoader` with `num_workers={workers_text}` and no `worker_init_fn` or `generator` in a "
                f"program that asks for reproducibility: worker seeds are drawn from the global torch RNG when "
                f"iteration starts, so data order and worker-side randomness shift whenever other code consumes "
                f"random numbers, and runs are not reproducible"
            )
        if intent is not None:
            if intent.kind == "all" and _last(intent.name) == "seed_everything":
                message += "; `seed_everything` without `workers=True` does not seed DataLoader workers"
            what = "asks for deterministic algorithms here" if intent.kind == "determinism" else "seeds its RNGs here"
            related.append(Related(intent.call, f"the program {what}"))
        fix = self._fix(node, program, randomness.own_rng if randomness is not None else None)
        self.report(node, message, fix=fix, related=related)

    # -- recognising the call --

    def _is_dataloader(self, node: cst.Call) -> bool:
        qualified = self.facts.qualify(node.func)
        if qualified is None or _last(qualified) != "DataLoader":
            return False
        defined_here = any(name == "DataLoader" for name, _, _ in self.facts.get("trn201.class"))  # type: ignore[misc]
        if qualified in _DATALOADERS or (qualified.startswith("torch_geometric.") and not defined_here):
            return True
        return qualified == "DataLoader" and self.facts.has("trn201.star_dataloader") and not defined_here

    def _is_zero(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Integer):
            return value.evaluated_value == 0
        if isinstance(value, cst.Name):
            constants = dict(self.facts.get("trn201.const"))  # type: ignore[arg-type]
            found = constants.get(value.value)
            return found == 0
        return False

    # -- the fix --

    def _fix(self, node: cst.Call, program: _Program, own_rng: AttrBinding | None) -> FixSpec | None:
        """Adds the kwargs and the PyTorch-notes definitions. When the dataset
        holds its own RNG, the new `seed_worker` re-creates it per worker; the
        fix is then not safe (it changes the dataset's random stream, and an
        existing `seed_worker` is not extended)."""
        facts = self.facts
        torch_name = _module_alias(facts, "torch")
        changes: list = []
        # seed_worker: reuse one that exists, else define it after the imports.
        has_seed_worker = facts.has("trn201.seed_worker") or facts.imported("seed_worker") is not None
        if not has_seed_worker:
            anchor = self._import_anchor()
            if anchor is None:
                return None
            imports: list[str] = []
            if torch_name is None:
                imports.append("import torch")
            random_name = _module_alias(facts, "random")
            if random_name is None:
                imports.append("import random")
                random_name = "random"
            numpy_name = _module_alias(facts, "numpy")
            body = [
                "def seed_worker(worker_id):",
                f"    worker_seed = {torch_name or 'torch'}.initial_seed() % 2**32",
            ]
            if numpy_name is not None:
                body.append(f"    {numpy_name}.random.seed(worker_seed)")
            body.append(f"    {random_name}.seed(worker_seed)")
            if own_rng is not None and isinstance(own_rng.node, cst.Call):
                if own_rng.label == "torch.Generator":
                    rebuilt = f"{torch_name or 'torch'}.Generator().manual_seed(worker_seed)"
                else:
                    rebuilt = f"{_code(own_rng.node.func)}(worker_seed)"
                attr = own_rng.attr
                body += [
                    f"    dataset = {torch_name or 'torch'}.utils.data.get_worker_info().dataset",
                    f"    while not hasattr(dataset, \"{attr}\") and hasattr(dataset, \"dataset\"):",
                    "        dataset = dataset.dataset  # unwrap Subset",
                    f"    if hasattr(dataset, \"{attr}\"):",
                    f"        # each worker starts with a copy of the same `{attr}` state",
                    f"        dataset.{attr} = {rebuilt}",
                ]
            trailing = "\n" * (max(0, 2 - self._blank_lines_after(anchor)) + 1)  # PEP 8: two blank lines
            changes.append(InsertAfter(anchor, "\n".join(imports + ["", ""] + body) + trailing))
        # g: reuse a generator bound in scope, else create one before this statement.
        generator = self._existing_generator()
        if generator is None:
            statement = self._enclosing_statement()
            if statement is None:
                return None
            generator = "loader_generator" if facts.has("trn201.g_taken") else "g"
            seed = self._seed_text(program)
            changes.append(InsertBefore(
                statement,
                f"{generator} = {torch_name or 'torch'}.Generator()\n{generator}.manual_seed({seed})",
            ))
        changes.insert(0, Replace(node, _with_kwargs(node, generator)))
        return FixSpec(
            f"Seed DataLoader workers (`worker_init_fn=seed_worker, generator={generator}`)",
            tuple(changes),
            safe=own_rng is None,
        )

    def _import_anchor(self) -> cst.CSTNode | None:
        """The last top-level import before the statement holding the call."""
        current_top = self.walk.stack[1] if len(self.walk.stack) > 1 else None
        anchor = None
        imports = set(map(id, self.facts.get("trn201.import")))
        for stmt in self.facts.get("trn201.top"):
            if stmt is current_top:
                break
            if id(stmt) in imports:
                anchor = stmt
        return anchor  # type: ignore[return-value]

    def _blank_lines_after(self, stmt: cst.CSTNode) -> int:
        tops = self.facts.get("trn201.top")
        for index, top in enumerate(tops):
            if top is stmt and index + 1 < len(tops):
                following = tops[index + 1]
                return next((n for node, n in self.facts.get("trn201.blanks") if node is following), 0)  # type: ignore[misc]
        return 0

    def _existing_generator(self) -> str | None:
        function = self.walk.function
        for scope, name in self.facts.get("trn201.generator"):  # type: ignore[misc]
            if scope is None or scope is function:
                return name
        return None

    def _enclosing_statement(self) -> cst.CSTNode | None:
        """The innermost statement that sits directly in a block body."""
        stack = self.walk.stack
        for index in range(len(stack) - 1, 0, -1):
            node, parent = stack[index], stack[index - 1]
            if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and isinstance(
                parent, (cst.IndentedBlock, cst.Module)
            ):
                return node
        return None

    def _seed_text(self, program: _Program) -> str:
        """The program's seed when it is visible from the DataLoader's scope:
        a seed call in the same function, a module constant, a literal."""
        constants = dict(self.facts.get("trn201.const"))  # type: ignore[arg-type]
        fallback = None
        for seed in program.seeds:
            if seed.kind == "determinism" or seed.in_worker:
                continue
            value = _arg(seed.call, "seed", 0)
            if value is None or not _simple(value):
                continue
            if seed.function is not None and seed.function is self.walk.function:
                return _code(value)
            if fallback is None and (isinstance(value, cst.Integer) or (
                    isinstance(value, cst.Name) and value.value in constants)):
                fallback = _code(value)
        return fallback or "0"

    VALID = [
        # num_workers=0: everything runs in the main process
        "import torch\nfrom torch.utils.data import DataLoader\ntorch.manual_seed(0)\n"
        "loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=0)\n",
        # no num_workers: the default is 0
        "import torch\ntorch.manual_seed(0)\nloader = torch.utils.data.DataLoader(ds, batch_size=32)\n",
        # worker_init_fn passed
        "import random\nimport numpy as np\nimport torch\nfrom torch.utils.data import DataLoader\n\n"
        "def seed_worker(worker_id):\n    worker_seed = torch.initial_seed() % 2**32\n"
        "    np.random.seed(worker_seed)\n    random.seed(worker_seed)\n\n"
        "torch.manual_seed(0)\nloader = DataLoader(ds, num_workers=4, worker_init_fn=seed_worker)\n",
        # generator passed
        "import torch\nfrom torch.utils.data import DataLoader\ntorch.manual_seed(0)\n"
        "g = torch.Generator()\ng.manual_seed(0)\nloader = DataLoader(ds, num_workers=4, generator=g)\n",
        # no seeds, deterministic dataset
        "import torch\nfrom torch.utils.data import DataLoader, Dataset\n\n"
        "class Squares(Dataset):\n    def __len__(self):\n        return 100\n"
        "    def __getitem__(self, i):\n        return torch.tensor([float(i * i)])\n\n"
        "loader = DataLoader(Squares(), batch_size=8, num_workers=4)\n",
        # Lightning seeds the workers itself
        "import torch\nimport lightning as L\nfrom torch.utils.data import DataLoader\n"
        "L.seed_everything(42, workers=True)\nloader = DataLoader(ds, num_workers=8)\n",
        # kwargs splat: cannot tell what it carries
        "import torch\nfrom torch.utils.data import DataLoader\ntorch.manual_seed(0)\n"
        "kwargs = {'num_workers': 4, 'worker_init_fn': seed_worker}\nloader = DataLoader(ds, **kwargs)\n",
        # a DataLoader class of the project itself
        "import torch\ntorch.manual_seed(0)\n\nclass DataLoader:\n    def __init__(self, ds, num_workers=0):\n"
        "        self.ds = ds\n\nloader = DataLoader([1, 2], num_workers=4)\n",
        # module constant that is 0
        "import torch\nfrom torch.utils.data import DataLoader\nNUM_WORKERS = 0\ntorch.manual_seed(1)\n"
        "loader = DataLoader(ds, num_workers=NUM_WORKERS)\n",
        # generator passed positionally after everything else
        "import torch\nfrom torch.utils.data import DataLoader\ntorch.manual_seed(0)\n"
        "loader = DataLoader(ds, 8, True, None, None, 4, None, False, False, 0, None, None, torch.Generator())\n",
        # seeding a split generator elsewhere but dataset deterministic and no global seed
        "import torch\nfrom torch.utils.data import DataLoader, random_split\n"
        "train, val = random_split(ds, [0.9, 0.1], generator=torch.Generator().manual_seed(0))\n"
        "loader = DataLoader(train, num_workers=4)\n",
        # the dataset creates its RNG lazily, inside each worker: not a shared copy
        "import numpy as np\nimport torch\nfrom torch.utils.data import Dataset, DataLoader\n\n"
        "class Lazy(Dataset):\n    def __init__(self):\n        self.rng = None\n"
        "    def __getitem__(self, i):\n        if self.rng is None:\n"
        "            self.rng = np.random.default_rng()\n        return self.rng.random()\n"
        "loader = DataLoader(Lazy(), num_workers=2)\n",
    ]
    INVALID = [
        Invalid(
            _TRN201_INVALID[0],
            line=5,
            fixed=(
                "import torch\nfrom torch.utils.data import DataLoader\nimport random\n\n\n"
                "def seed_worker(worker_id):\n    worker_seed = torch.initial_seed() % 2**32\n"
                "    random.seed(worker_seed)\n\n\n"
                "torch.manual_seed(0)\ng = torch.Generator()\ng.manual_seed(0)\n"
                "loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=4, worker_init_fn=seed_worker, generator=g)\n"
            ),
        ),
        Invalid(_TRN201_INVALID[1], line=10),
        Invalid(_TRN201_INVALID[2], line=11),
        Invalid(_TRN201_INVALID[3], line=6),
        Invalid(_TRN201_INVALID[4], line=5),
        Invalid(_TRN201_INVALID[5], line=18),
        Invalid(_TRN201_INVALID[6], line=16),
        Invalid(_TRN201_INVALID[7], line=10),
    ]



# --- TRN202 --------------------------------------------------------------------------


_TRN202_INVALID = [
    "import numpy as np\nimport torch\n\ntorch.manual_seed(SEED)\nnoise = np.random.normal(0, 1, size=(4,))\n",
    "import random\nimport torch\n\ndef set_seed(seed):\n    torch.manual_seed(seed)\n\nset_seed(0)\nrandom.shuffle(files)\n",
    # numpy seeded, torch randomness used
    "import numpy as np\nimport torch.nn as nn\n\nnp.random.seed(0)\nmodel = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1))\n",
    # only the current GPU seeded
    "import torch\nx = torch.zeros(1).cuda()\ntorch.cuda.manual_seed(0)\nmodel = torch.nn.Linear(2, 2).cuda()\n",
    # random.seed but numpy draws through an alias
    "import random\nimport numpy as np\nimport torch\nrandom.seed(1)\ntorch.manual_seed(1)\nperm = np.random.permutation(100)\n",
    # seeds inside main(), numpy draw in a dataset
    "import numpy as np\nimport torch\n\ndef main(args):\n    torch.manual_seed(args.seed)\n"
    "    torch.cuda.manual_seed_all(args.seed)\n    x = np.random.rand(2)\n",
]


_SEED_FUNCTION = {"torch": "torch.manual_seed", "numpy": "np.random.seed", "random": "random.seed"}
_ORDER = ("torch", "cuda", "cuda_all", "numpy", "random")


class IncompleteSeeding(Rule):
    CODE = "TRN202"

    _UNSET = object()

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._plan: object = self._UNSET

    def visit_Call(self, node: cst.Call) -> None:
        if self._plan is self._UNSET:
            self._plan = self._incomplete() if self.facts.has("trn2.seed") else None
        plan = self._plan
        if plan is None or plan[0].call is not node:  # type: ignore[index]
            return
        anchor, missing, first_draw, cuda_only, global_seeds = plan  # type: ignore[misc]
        parts = []
        related = []
        partial_gpu = any(s.kind == "cuda" for s in global_seeds) and not any(s.kind == "cuda_all" for s in global_seeds)
        for lib in missing:
            draw = first_draw.get(lib)
            if lib == "torch" and cuda_only:
                parts.append(
                    "torch's CPU generator (model initialization, dropout and shuffling on CPU) is never seeded"
                    + (" and `torch.cuda.manual_seed` seeds only the current GPU" if partial_gpu else "")
                )
            else:
                where = f", yet `{_short(draw.name)}` draws from it" if draw is not None else ""
                parts.append(f"`{lib}`'s global RNG is never seeded{where}")
            if draw is not None:
                related.append(Related(draw.call, f"`{_short(draw.name)}` draws from the unseeded `{lib}` RNG"))
        message = (
            f"`{_short(anchor.name)}` seeds only part of the program's randomness: "
            + "; ".join(parts)
            + ", so runs differ even with the same seed"
        )
        self.report(node, message, fix=self._fix(anchor, missing), related=related)

    def _incomplete(self) -> tuple | None:
        """The seed call to flag and what it leaves unseeded, once per block."""
        program = _Program(self.facts)
        global_seeds = [s for s in program.seeds if s.kind in _ORDER and not s.in_worker]
        if not global_seeds or program.seeds_everything():
            return None
        anchor = min(global_seeds, key=lambda s: _ORDER.index(s.kind))
        seeded = set()
        for seed in global_seeds:
            if seed.kind == "torch":
                seeded.update(("torch", "cuda"))
            elif seed.kind in ("numpy", "random"):
                seeded.add(seed.kind)
        first_draw: dict[str, Draw] = {}
        for draw in program.draws:
            first_draw.setdefault(draw.library, draw)
        missing = [lib for lib in ("torch", "numpy", "random") if lib in first_draw and lib not in seeded]
        cuda_only = "torch" not in seeded and any(s.kind in ("cuda", "cuda_all") for s in global_seeds)
        if cuda_only and "torch" not in missing:
            missing.insert(0, "torch")
        if not missing:
            return None
        return anchor, missing, first_draw, cuda_only, global_seeds

    def _fix(self, anchor: SeedCall, missing: list[str]) -> FixSpec | None:
        if anchor.stmt is None:
            return None
        seed = _arg(anchor.call, "seed", 0)
        if seed is None:
            return None
        lines = []
        for lib in missing:
            alias = _module_alias(self.facts, lib)
            if alias is None:  # the library is only used through `from x import y`
                alias = lib
                lines.append(f"import {lib}")
            lines.append(f"{alias}.random.seed({_code(seed)})" if lib == "numpy" else
                         f"{alias}.manual_seed({_code(seed)})" if lib == "torch" else f"{alias}.seed({_code(seed)})")
        names = ", ".join(f"`{_SEED_FUNCTION[lib]}`" for lib in missing)
        return FixSpec(f"Also seed {names} with the same seed", (InsertAfter(anchor.stmt, "\n".join(lines)),),
                       safe=_simple(seed))

    VALID = [
        # everything seeded
        "import random\nimport numpy as np\nimport torch\n\nrandom.seed(0)\nnp.random.seed(0)\n"
        "torch.manual_seed(0)\nidx = np.random.permutation(10)\nrandom.shuffle(files)\n",
        # torch.manual_seed seeds every CUDA device too: no cuda seed needed
        "import torch\ntorch.manual_seed(0)\nmodel = torch.nn.Linear(4, 2).cuda()\nx = torch.randn(3, 4, device='cuda')\n",
        # a library helper seeds everything
        "import numpy as np\nimport torch\nfrom transformers import set_seed\nset_seed(42)\nx = np.random.rand(3)\n",
        # no seeds at all: not asking for reproducibility
        "import numpy as np\nimport torch\nx = np.random.rand(3)\ny = torch.randn(3)\n",
        # imported helper: its body is elsewhere
        "import numpy as np\nimport torch\nfrom utils import seed_everything\nseed_everything(1)\nx = np.random.rand(3)\n",
        # own seeded generator objects are not global draws
        "import numpy as np\nimport torch\ntorch.manual_seed(0)\nrng = np.random.default_rng(0)\nx = rng.normal(size=3)\n",
        # user helper in the file seeds all three
        "import random\nimport numpy as np\nimport torch\n\ndef set_seed(seed):\n    random.seed(seed)\n"
        "    np.random.seed(seed)\n    torch.manual_seed(seed)\n    torch.cuda.manual_seed_all(seed)\n\n"
        "set_seed(3)\nsample = random.choice(items)\nnoise = np.random.randn(4)\n",
        # Lightning
        "import numpy as np\nimport torch\nimport lightning as L\nL.seed_everything(0)\nx = np.random.rand(3)\n",
        # numpy seeded, no visible torch randomness
        "import numpy as np\nimport torch\nnp.random.seed(0)\nx = torch.from_numpy(np.random.rand(3))\n",
    ]
    INVALID = [
        Invalid(
            _TRN202_INVALID[0],
            line=4,
            fixed=(
                "import numpy as np\nimport torch\n\ntorch.manual_seed(SEED)\nnp.random.seed(SEED)\n"
                "noise = np.random.normal(0, 1, size=(4,))\n"
            ),
        ),
        Invalid(
            _TRN202_INVALID[1],
            line=5,
            fixed=(
                "import random\nimport torch\n\ndef set_seed(seed):\n    torch.manual_seed(seed)\n"
                "    random.seed(seed)\n\nset_seed(0)\nrandom.shuffle(files)\n"
            ),
        ),
        Invalid(_TRN202_INVALID[2], line=4),
        Invalid(_TRN202_INVALID[3], line=3),
        Invalid(_TRN202_INVALID[4], line=5),
        Invalid(_TRN202_INVALID[5], line=5),
    ]



# --- helpers ---------------------------------------------------------------------------


def _module_alias(facts: FileFacts, module: str) -> str | None:
    """The local name bound to `module` by an import (`np` for numpy)."""
    for local, full in facts.aliases:
        if full == module and not local.startswith("="):
            return local
    return None


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _simple(expr: cst.BaseExpression) -> bool:
    """A seed expression that can be evaluated again with the same value."""
    return isinstance(expr, cst.Integer) or dotted_name(expr) is not None


def _short(qualified: str) -> str:
    return qualified.replace("numpy.", "np.", 1) if qualified.startswith("numpy.") else qualified


def _with_kwargs(call: cst.Call, generator: str) -> cst.Call:
    """`call` with `worker_init_fn=seed_worker, generator=<g>` appended, keeping
    one-argument-per-line layouts."""
    new_args = [("worker_init_fn", "seed_worker"), ("generator", generator)]
    args = list(call.args)
    last = args[-1]
    multiline = isinstance(last.comma, cst.Comma) and isinstance(last.comma.whitespace_after, cst.ParenthesizedWhitespace)
    tail = last.comma  # a trailing comma stays trailing
    if multiline:
        # the comma before the last argument carries the per-line indentation
        before = args[-2].comma if len(args) >= 2 else None
        if isinstance(before, cst.Comma) and isinstance(before.whitespace_after, cst.ParenthesizedWhitespace):
            separator = before
        else:
            separator = cst.Comma(whitespace_after=call.whitespace_before_args)
    else:
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    args[-1] = last.with_changes(comma=separator)
    for index, (keyword, value) in enumerate(new_args):
        is_last = index == len(new_args) - 1
        args.append(cst.Arg(
            value=cst.Name(value),
            keyword=cst.Name(keyword),
            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
            comma=(tail if is_last else separator),
        ))
    return call.with_changes(args=args)

