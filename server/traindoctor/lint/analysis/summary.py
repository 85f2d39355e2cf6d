"""What one file tells the others: its per-file summary, and the facts a file reads from
the project (its imports resolved through the project index, project.py).

Small, immutable, compared with ==, picklable (built in `check`'s worker processes):
plain strings and tuples, no parse-tree nodes. The summaries are built from the file
model by summarize.py (the top layer, which owns how a value or an event is computed);
this layer only holds them, so that the file model, values and training can read them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Iterable, Union

import libcst as cst

from .names import dotted_name


@dataclass(frozen=True)
class FunctionSummary:
    qualname: str  # "train", "Net.forward"
    params: tuple[str, ...] = ()
    # The joined value it returns (values.py's Value as facts: kind, grad, role, prob, zero, obj, unit);
    # () when unknown.
    returns: tuple[str, ...] = ()
    # The library constructor of the object it returns, with its literal arguments (PassedArgument.ctor):
    # `build_criterion()` returning `nn.BCELoss()` gives a caller the loss's class.
    returns_ctor: str = ""
    returns_eval: bool = False  # returns a module it put in eval mode
    returns_state_dict: bool = False  # returns `x.state_dict()`
    seeds: tuple[str, ...] = ()  # the global RNGs it seeds (randomness.classify_seed's kinds), sorted
    draws: tuple[str, ...] = ()  # the global RNGs it draws from (torch | numpy | random), sorted
    # The RNGs of `draws` whose every draw here only becomes its return value (`return np.random.randint(...)`):
    # what the value is for is the caller's (a seed it draws: seed_draws.seeds_with at the call).
    returned_draws: tuple[str, ...] = ()
    zeroes: bool = False  # zeroes gradients
    backward: bool = False  # calls backward (or steps an optimizer)
    no_grad: bool = False  # runs under no_grad/inference_mode (its decorator)
    leaves_grad_off: bool = False  # returns with `set_grad_enabled(False)` in force
    modes: tuple[str, ...] = ()  # "eval" / "train" calls it makes, in order, deduplicated
    # (eval | train, receiver) of the mode switches it makes on a parameter (`model`, `model.backbone`), in
    # order: a caller's model is left in the last mode (training.py expands a call into them).
    param_modes: tuple[tuple[str, str], ...] = ()
    set_epoch: bool = False  # steps a sampler's epoch
    # It returns a shuffling DistributedSampler ("sampler"), a DataLoader over one ("distributed-loader"),
    # or one as the i-th element of a returned tuple ("distributed-loader:i"): training.returns' kinds.
    returns_sampling: tuple[str, ...] = ()
    # Parameters it iterates every epoch (an epoch loop over them, or handing them to a function each
    # epoch) in a file that never calls `set_epoch` (training.epoch_loop): TRN203 at a caller's loader.
    epoch_loaders: tuple[str, ...] = ()
    no_grad_decorator: bool = False  # a decorator that runs the function it wraps under no_grad
    accumulates: tuple[str, ...] = ()  # parameters it adds into its object's state, kept across calls (meters.py)
    returns_from: tuple[str, ...] = ()  # parameters its returned tensor is computed from by tensor operations
    # Functions and classes of other modules it calls, qualified as its file spells them: what
    # they seed and draw from is its own too (the project index adds it, project.py).
    calls: tuple[str, ...] = ()
    # Parameters it runs with autograd on inside a loop, training nothing ("model", or "model.predict"
    # when it runs them through a method): a caller's evaluated model records a graph per batch there.
    evaluates: tuple[str, ...] = ()
    evaluates_own: bool = False  # a method that puts its instance's module in eval mode and runs it, grad on


@dataclass(frozen=True)
class ClassSummary:
    name: str
    bases: tuple[str, ...] = ()  # qualified as the defining file spells them
    module: bool = False  # an nn.Module (Lightning, HF model) subclass
    scaler: bool = False  # wraps a GradScaler built in __init__
    dataset: bool = False
    methods: tuple[FunctionSummary, ...] = ()
    # Entering an instance turns autograd off (autograd_off.class_turns_grad_off): always, ("", -1, True),
    # or when the __init__ argument is true, (parameter, position or -1, its default is true).
    grad_off: tuple[str, int, bool] | None = None
    loader: bool = False  # a DataLoader subclass
    # Methods that only a DataLoader's worker processes run (worker_side.worker_methods): what they
    # draw is reseeded per worker when the loader that runs the object starts workers.
    worker_methods: tuple[str, ...] = ()
    # Worker methods that draw only when a constructor argument is one of some string literals
    # (worker_side.worker_draw_guards): (method, attribute, parameter, position, literals, default).
    worker_guards: tuple[tuple, ...] = ()

    def method(self, name: str) -> FunctionSummary | None:
        return next((m for m in self.methods if m.qualname.rsplit(".", 1)[-1] == name), None)


@dataclass(frozen=True)
class Binding:
    """A module-level name bound to an object: its kind (model.py's kind_of_callee)."""

    name: str
    kind: str


@dataclass(frozen=True)
class ImportFact:
    """One import of a file: `import a.b as c` is ("c", "a.b", "", 0); `from ..x import y as z`
    is ("z", "x", "y", 2); `from x import *` is ("*", "x", "*", 0)."""

    local: str
    module: str
    name: str
    level: int = 0


@dataclass(frozen=True)
class PassedArgument:
    """One argument a call passes to a function of another project file: by `position` among the
    positional ones (-1 for a keyword), its Value as facts (values.as_facts) and, for an object built
    by a library class, that constructor with its literal arguments (`torch.nn.CrossEntropyLoss(
    reduction='sum')`; any other argument is `...`)."""

    position: int
    keyword: str
    facts: tuple
    ctor: str = ""


# The arguments of one call site, or None where they cannot be mapped to parameters (`f(*args)`).
CallSiteArguments = Union[tuple[PassedArgument, ...], None]


@dataclass(frozen=True)
class OutgoingCall:
    """The calls a file makes of one imported name (`train_one_epoch`, `engine.fit`, a class): the
    callee as its code spells it, and every site's arguments. The project index turns them around
    into what each defining file's functions are passed (ImportedFacts.incoming)."""

    callee: str
    sites: tuple[CallSiteArguments, ...]


@dataclass(frozen=True)
class FileSummary:
    functions: tuple[FunctionSummary, ...] = ()
    classes: tuple[ClassSummary, ...] = ()
    bindings: tuple[Binding, ...] = ()
    saves: tuple[tuple[str, str, str], ...] = ()  # (literal path, "module" | "state-dict", object) of torch.save
    imports: tuple[ImportFact, ...] = ()
    exports: tuple[str, ...] | None = None  # `__all__`, when the file lists it literally
    defined: tuple[str, ...] = ()  # every module-level name it binds (defs, classes, assignments)
    # Its module-level import aliases (`F` -> `torch.nn.functional`): what `from it import *` binds
    # besides its symbols, so that a star-importing file qualifies `F.dropout` as torch's.
    aliases: tuple[tuple[str, str], ...] = ()
    outgoing: tuple[OutgoingCall, ...] = ()  # its calls of imported names, with what each site passes

    def symbol(self, name: str) -> "Symbol | None":
        return self._symbols.get(name)

    @functools.cached_property
    def _symbols(self) -> dict[str, "Symbol"]:
        found: dict[str, Symbol] = {}
        for binding in self.bindings:
            found[binding.name] = binding
        for klass in self.classes:
            found[klass.name] = klass
        for function in self.functions:
            found[function.qualname] = function
        return found

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_symbols", None)
        return state


Symbol = Union[FunctionSummary, ClassSummary, Binding]


def informative(symbol: Symbol) -> bool:
    """The summary says something a rule can use (a function with only a name says nothing)."""
    if isinstance(symbol, FunctionSummary):
        return any(getattr(symbol, name) for name in symbol.__dataclass_fields__ if name not in ("qualname", "params"))
    if isinstance(symbol, ClassSummary):
        return symbol.module or symbol.scaler or symbol.dataset or any(informative(m) for m in symbol.methods)
    return True
EMPTY_SUMMARY = FileSummary()


@dataclass(frozen=True)
class ImportedFacts:
    """The project facts one file reads: each imported symbol by the qualified name the
    file's own code spells (names.py: `models.Net` for `from models import Net`, `Net` for
    `from .models import Net` or a star import), and what other files of the project save
    with `torch.save` to a literal path. Unknown stays unknown: a name not here is not
    a project fact."""

    symbols: tuple[tuple[str, Symbol], ...] = ()
    saves: tuple[tuple[str, str, str, str], ...] = ()  # (literal path, kind, saving file, object saved)
    aliases: tuple[tuple[str, str], ...] = ()  # import aliases its star imports bind (FileSummary.aliases)
    # Imported project functions whose summary says nothing: known to train, zero, seed, draw,
    # switch modes and keep their arguments in no state (a logging helper).
    plain: tuple[str, ...] = ()
    # Method names that every project class defining them runs under no_grad (its decorator):
    # `model.recognize(x)` on a model of any of those classes records no graph.
    no_grad_methods: tuple[str, ...] = ()
    # Method names that some project class's definition trains in (backward or an optimizer step):
    # a helper calling one on a model may be training it (a probe fitted on features), not evaluating.
    training_methods: tuple[str, ...] = ()
    # (class, method, subclass): a project class that derives, directly or not, from a class this file
    # defines overrides `method` to put its own module in eval mode and run it with autograd on
    # (`evaluates_own`), and no project definition of `method` trains or runs under no_grad. A base
    # class's `self.eval_step(batch)` runs one batch of such an evaluation on a subclass's instance.
    evaluating_overrides: tuple[tuple[str, str, str], ...] = ()
    # (qualname, sites): the calls other project files make of a function of this file (`Trainer.__init__`
    # for a class), each site's arguments as OutgoingCall keeps them.
    incoming: tuple[tuple[str, tuple[CallSiteArguments, ...]], ...] = ()

    @functools.cached_property
    def _by_key(self) -> dict[str, Symbol]:
        return dict(self.symbols)

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_by_key", None)
        return state

    def __bool__(self) -> bool:
        return bool(self.symbols or self.saves or self.aliases or self.plain or self.no_grad_methods or
                    self.training_methods or self.evaluating_overrides or self.incoming)

    def incoming_calls(self, qualname: str) -> tuple[CallSiteArguments, ...]:
        """What other project files pass at each of their calls of this file's function `qualname`."""
        return next((sites for name, sites in self.incoming if name == qualname), ())

    def plain_function(self, qualified: str | None) -> bool:
        """`qualified` is a project function known to do none of what a summary records."""
        return bool(qualified) and qualified in self.plain

    def no_grad_method(self, name: str) -> bool:
        """Every project class that defines the method `name` runs it under no_grad."""
        return name in self.no_grad_methods

    def training_method(self, name: str) -> bool:
        """Some project class that defines the method `name` calls backward or steps an optimizer in it."""
        return name in self.training_methods

    def evaluating_override(self, klass: str, method: str) -> str:
        """A project subclass of `klass` (a class of this file) whose `method` evaluates its own module
        (`evaluating_overrides`), "" when none."""
        return next((sub for base, name, sub in self.evaluating_overrides if base == klass and name == method), "")

    def star_aliases(self) -> tuple[tuple[str, str], ...]:
        """The module aliases the file's star imports of project modules bind (`F`, `nn`)."""
        return self.aliases

    def get(self, qualified: str | None) -> Symbol | None:
        if not qualified or not self.symbols:
            return None
        found = self._by_key.get(qualified)
        if found is None and "." in qualified:  # `models.Net.forward`, `helpers.Scaler.step`
            owner, _, member = qualified.rpartition(".")
            klass = self._by_key.get(owner)
            if isinstance(klass, ClassSummary):
                return klass.method(member)
        return found

    def function(self, qualified: str | None) -> FunctionSummary | None:
        found = self.get(qualified)
        return found if isinstance(found, FunctionSummary) else None

    def klass(self, qualified: str | None) -> ClassSummary | None:
        found = self.get(qualified)
        return found if isinstance(found, ClassSummary) else None

    def is_module(self, qualified: str | None) -> bool:
        """An imported project class that is an nn.Module. Its own question, not `klass`: a file whose
        classes derive from a project class that is no module (torch.optim's `Optimizer`) gets the same
        answer as with no facts, and `check` need not lint it again."""
        found = self.klass(qualified)
        return found is not None and found.module

    def object_kind(self, qualified: str | None) -> str | None:
        """What an imported module-level name holds (a model, a scaler...), or what
        calling an imported project class builds."""
        found = self.get(qualified)
        if isinstance(found, Binding):
            return found.kind
        if isinstance(found, ClassSummary):
            return "scaler" if found.scaler else "model" if found.module else "dataset" if found.dataset else None
        return None

    def binding(self, qualified: str | None) -> Binding | None:
        found = self.get(qualified)
        return found if isinstance(found, Binding) else None

    def randomness(self, qualified: str | None) -> tuple[tuple[str, str, str], ...]:
        """(function, "seeds" | "draws", RNG) of an imported function, or of every method of an
        imported class (built here, its methods may run here)."""
        found = self.get(qualified)
        functions = found.methods if isinstance(found, ClassSummary) else \
            (found,) if isinstance(found, FunctionSummary) else ()
        return tuple((f.qualname, how, rng) for f in functions for how, rngs in (("seeds", f.seeds), ("draws", f.draws))
                     for rng in rngs)

    def returns(self, qualified: str | None) -> tuple[str, ...]:
        """What an imported function returns (FunctionSummary.returns), () when unknown."""
        found = self.function(qualified)
        return found.returns if found is not None else ()

    def evaluated_argument(self, qualified: str | None, position: int, keyword: str) -> str:
        """What the imported function does with the argument at `position` (among its parameters
        other than self/cls) or passed by `keyword`: its `evaluates` entry ("model", "model.predict"),
        "" when it does not run it. Asked per argument, so that a helper that runs some other
        argument (`dict_apply(x, func)`) answers nothing and costs its importers no second lint."""
        found = self.function(qualified)
        if found is None or not found.evaluates:
            return ""
        params = [p for p in found.params if p not in ("self", "cls")]
        param = keyword if keyword in params else params[position] if 0 <= position < len(params) else ""
        return next((e for e in found.evaluates if param and e.partition(".")[0] == param), "")

    def fact(self, qualified: str | None, name: str):
        """One field of an imported function's summary (`returns_eval`, `seeds`...), falsy when unknown."""
        found = self.function(qualified)
        return getattr(found, name) if found is not None else None

    def has_kind(self, kind: str) -> bool:
        """Some imported name holds, or builds, an object of this kind (a "scaler")."""
        return any(self.object_kind(key) == kind for key, _ in self.symbols)

    def saved(self, path: str) -> tuple[str, str, str] | None:
        """(kind, file, object) of another project file's `torch.save` to this literal path."""
        literal = literal_path(path)
        if literal is None:
            return None
        for saved, kind, where, obj in self.saves:
            if saved == literal:
                return kind, where, obj
        return None


EMPTY_IMPORTS = ImportedFacts()
# What rules and values ask of the imported facts (AskedFacts notes each).
QUERIES = ("get", "function", "klass", "is_module", "object_kind", "binding", "randomness", "returns", "fact",
           "has_kind", "saved", "star_aliases", "plain_function", "no_grad_method",
           "training_method", "evaluated_argument", "evaluating_override", "incoming_calls")


class AskedFacts(ImportedFacts):
    """No facts, but it notes every question a lint asks (`asked`): `check` lints a file
    again with the project's facts only when one of them has an answer there, since a
    lint whose every question gets the same answer finds the same things."""

    def __init__(self) -> None:
        super().__init__()
        object.__setattr__(self, "asked", set())

    def __bool__(self) -> bool:
        return True  # asked as if it held facts, so that every question is put


def _noting(name: str):
    def ask(self, *args):
        self.asked.add((name, args))
        return getattr(EMPTY_IMPORTS, name)(*args)
    return ask


for _query in QUERIES:
    setattr(AskedFacts, _query, _noting(_query))


def answers(facts: ImportedFacts, asked) -> bool:
    """Does `facts` answer one of these questions (AskedFacts.asked) differently from no facts?"""
    return any(getattr(facts, name)(*args) for name, args in asked)  # no facts answer every question falsy


def literal_path(source: str) -> str | None:
    """The text of a plain string literal (`"model.pth"`, `'out/net.pt'`), else None."""
    source = source.strip()
    if len(source) >= 2 and source[0] == source[-1] and source[0] in "'\"" and source.count(source[0]) == 2:
        return source[1:-1]
    return None


def imports_of(statements: Iterable[cst.CSTNode]) -> tuple[ImportFact, ...]:
    """The imports among top-level statements (also inside a top-level if/try)."""
    found: list[ImportFact] = []
    for stmt in statements:
        _scan(stmt, found)
    return tuple(found)


def _scan(stmt: cst.CSTNode, found: list[ImportFact]) -> None:
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    full = dotted_name(alias.name) or ""
                    local = alias.asname.name.value if alias.asname is not None and \
                        isinstance(alias.asname.name, cst.Name) else full
                    found.append(ImportFact(local, full, ""))
            elif isinstance(small, cst.ImportFrom):
                module = dotted_name(small.module) if small.module is not None else ""
                level = len(small.relative)
                if isinstance(small.names, cst.ImportStar):
                    found.append(ImportFact("*", module or "", "*", level))
                    continue
                for alias in small.names:
                    name = dotted_name(alias.name) or ""
                    local = alias.asname.name.value if alias.asname is not None and \
                        isinstance(alias.asname.name, cst.Name) else name
                    found.append(ImportFact(local, module or "", name, level))
    elif isinstance(stmt, cst.If):
        for inner in stmt.body.body:
            _scan(inner, found)
        if isinstance(stmt.orelse, cst.Else):
            for inner in stmt.orelse.body.body:
                _scan(inner, found)
    elif isinstance(stmt, cst.Try):
        for inner in stmt.body.body:
            _scan(inner, found)
        for handler in stmt.handlers:
            for inner in handler.body.body:
                _scan(inner, found)

