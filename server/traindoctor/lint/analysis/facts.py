"""Typed facts the analysis records per block and the file model merges.

Each fact compares by its semantic fields only (names, kinds, source text); the
libcst nodes it carries for locations and fix anchors are excluded from
equality, so a re-parsed block that says the same things yields equal facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

Node = Optional[cst.CSTNode]


def _node() -> Node:
    return field(default=None, compare=False, hash=False, repr=False)  # type: ignore[return-value]


def _loops() -> tuple[int, ...]:
    """The ids of the loops around a seed or draw inside its function (a location, like the node)."""
    return field(default=(), compare=False, hash=False, repr=False)  # type: ignore[return-value]


class Expressions(tuple):
    """Expression nodes that compare as their code does (libcst's deep_equals): a fact's
    "source text" without rendering it. Rendering every function's return values cost a
    tenth of the analysis, and facts are compared only between two lints of a document,
    only where a block was parsed again."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, tuple) and len(self) == len(other) and \
            all(a is b or (isinstance(b, cst.CSTNode) and a.deep_equals(b)) for a, b in zip(self, other))

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return len(self)


@dataclass(frozen=True)
class Obj:
    """A module-level name or a `self.` attribute bound to an object built by a call."""

    name: str  # "criterion", "self.criterion"
    owner: str  # the class for `self.` attributes, else ""
    callee: str  # the qualified constructor or in-file class/factory name
    text: "Expressions"  # the constructor, compared as its source is (not rendered: most never are)
    where: str  # "module" | the method that builds it ("__init__", "setup", ...)
    node: Node = _node()  # the constructor call
    stmt: Node = _node()


@dataclass(frozen=True)
class ClassInfo:
    name: str
    bases: tuple[str, ...]  # qualified
    node: Node = _node()


@dataclass(frozen=True)
class FuncInfo:
    qualname: str  # "train", "Net.forward"
    name: str
    klass: str
    params: tuple[str, ...]
    returns: Expressions  # each returned expression
    no_grad: bool  # decorated with no_grad/inference_mode
    trains: bool  # calls backward() or an optimizer step
    node: Node = _node()


@dataclass(frozen=True)
class CallSite:
    """A call of a plain name or `self.method`: what in-file functions receive."""

    callee: str
    in_no_grad: bool
    args: tuple[str, ...] = field(default=(), compare=False, hash=False)
    node: Node = _node()


@dataclass(frozen=True)
class Seed:
    kind: str  # torch | cuda | cuda_all | numpy | random | all | helper | determinism
    name: str  # qualified
    seed: str  # source of the seed argument ("" when none)
    function: str  # qualname of the enclosing function ("" at module level)
    workers: bool = False  # Lightning's seed_everything(workers=True)
    node: Node = _node()
    stmt: Node = _node()
    loops: tuple[int, ...] = _loops()


@dataclass(frozen=True)
class Draw:
    library: str  # torch | numpy | random
    name: str
    function: str
    klass: str
    method: str
    node: Node = _node()
    loops: tuple[int, ...] = _loops()


@dataclass(frozen=True)
class MethodUse:
    """Inside a class method: `self.x(...)`/`self.x.y(...)` calls, and `generator=self.x`."""

    klass: str
    method: str
    attr: str
    node: Node = _node()


@dataclass(frozen=True)
class Pad:
    value: str  # the padding value's source
    targets: bool  # targets/labels themselves are padded
    node: Node = _node()


@dataclass(frozen=True)
class Marker:
    """A fact with no payload beyond its kind: "ignore-mapped" (padding mapped to
    -100), "ignore-selective" (-100 written at positions chosen by a value, not a block),
    "ignore-index-arg" (a loss given `ignore_index=`), "index-zeroed" (`w[PAD] = 0`, text: `w`), "pad-string",
    "workers-seeded", "star-dataloader"."""

    kind: str
    text: str = ""
    node: Node = _node()


@dataclass(frozen=True)
class Checkpoint:
    """`torch.save(obj, path)` ("save": `callee` is the constructor a local `obj` was
    bound to, if any), or a call that allow-lists classes for weights-only loading
    ("safe-globals": add_safe_globals/safe_globals)."""

    kind: str
    obj: str
    callee: str
    path: str
    function: str
    klass: str
    node: Node = _node()
    file: str = ""  # the file name the path names (file_named in program.py); "" when not known


@dataclass(frozen=True)
class TopLevel:
    """One top-level statement: what fixes need to place imports and helpers."""

    is_import: bool
    names: tuple[str, ...]  # names it binds at module level
    blank_lines_before: int
    node: Node = _node()


@dataclass(frozen=True)
class BlockFacts:
    objects: tuple[Obj, ...] = ()
    classes: tuple[ClassInfo, ...] = ()
    functions: tuple[FuncInfo, ...] = ()
    calls: tuple[CallSite, ...] = ()
    seeding: tuple[object, ...] = ()  # Seed | Draw | MethodUse | Marker
    padding: tuple[object, ...] = ()  # Pad | Marker
    constants: tuple[tuple[str, str], ...] = ()  # module-level NAME = <int or pad value>
    globals: tuple[tuple[str, str], ...] = ()  # module-level NAME = <expression> outside top-level loops
    layout: tuple[TopLevel, ...] = ()
    program: tuple[object, ...] = ()  # Checkpoint | Marker("spawn-fn": the function mp.spawn starts)
    precision: tuple[Marker, ...] = ()  # "grad-scaler" (one is built), "module-backward" (TRN403)
    training: tuple[object, ...] = ()  # training.Routine: loops and ordered training events per function
    # Per method, the statements that assign into `self` (meters.py reads what they keep): compared by
    # their code, so that an edit of one re-runs what reads it and rebuilds the file's summary.
    meters: tuple[Expressions, ...] = ()


CATEGORIES = tuple(f for f in BlockFacts.__dataclass_fields__)
