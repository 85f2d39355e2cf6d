"""The shape of a rule: one class that queries the semantic model (analysis/).

A rule is a libcst `BatchableCSTVisitor`; the engine runs every rule over a
block in one traversal, after the file model is built. Its `valid`/`invalid`
examples live in its YAML entry: the tests run them and the docs show them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Sequence, Union

import libcst as cst

from ..catalog import RuleInfo, get_rule
from .analysis.training import Training, training_of
from .context import WalkState
from .walk import handled_types

if TYPE_CHECKING:
    from .analysis.collect import BlockAnalysis
    from .analysis.model import FileModel
    from .analysis.values import Values


# --- Fix descriptions (turned into text edits by the engine) -----------------


@dataclass(frozen=True)
class Replace:
    """Replace `node` with `new` (a node, rendered by libcst, or source text)."""

    node: cst.CSTNode
    new: Union[cst.CSTNode, str]


@dataclass(frozen=True)
class InsertBefore:
    """Insert whole lines before the statement `node`, at its indentation."""

    node: cst.CSTNode
    text: str


@dataclass(frozen=True)
class InsertAfter:
    """Insert whole lines after the statement `node`, at its indentation."""

    node: cst.CSTNode
    text: str


Change = Union[Replace, InsertBefore, InsertAfter]


@dataclass(frozen=True)
class FixSpec:
    title: str
    changes: tuple[Change, ...]
    safe: bool = True


@dataclass(frozen=True)
class Related:
    node: cst.CSTNode
    message: str


@dataclass(frozen=True)
class Report:
    """One finding as a rule reports it, before the engine places it in the file."""

    code: str
    node: cst.CSTNode
    message: str | None
    fix: FixSpec | None
    related: tuple[Related, ...]
    group: Related | None = None


class ReportSink:
    """Where a rule's reports go during one block's traversal."""

    def __init__(self) -> None:
        self.reports: list[Report] = []

    def add(self, code: str, node: cst.CSTNode, message: str | None, fix: FixSpec | None,
            related: tuple[Related, ...], group: Related | None = None) -> None:
        self.reports.append(Report(code, node, message, fix, related, group))


@dataclass(frozen=True)
class Invalid:
    """An example the rule must flag. `line` (1-based) pins the finding;
    `fixed`, when given, is the whole snippet after applying every fix."""

    code: str
    line: int | None = None
    fixed: str | None = None


# --- Rules -------------------------------------------------------------------------


class Rule(cst.BatchableCSTVisitor):
    """One rule: `CODE`, the fact categories it `READS` (analysis/facts.py:
    objects, classes, functions, calls, seeding, padding, constants, layout,
    names), visit_ handlers, and its examples (rules/lint/<CODE>.yaml `valid`/
    `invalid`, which are also its documentation). A block's cached results for
    the rule are reused while the block's text and those categories are unchanged."""

    CODE: ClassVar[str]
    READS: ClassVar[tuple[str, ...]] = ()
    # True when the rule's visit_Module/leave_Module only judges what its other
    # handlers gathered, so that a block without their node types cannot be reported.
    MODULE_HOOK_JUDGES_VISITS: ClassVar[bool] = False

    def __init__(self, context: "RuleContext", sink: "ReportSink") -> None:
        super().__init__()
        self.walk = context.walk
        self.model = context.model
        self.names = context.model.names
        self.values = context.values
        self.analysis = context.analysis
        self._sink = sink

    @classmethod
    def applies_to(cls, analysis: "BlockAnalysis") -> bool:
        """Can the rule report anything on this block? Not when it has no handler for
        any node type in it (every block is a Module: a Module hook always counts,
        unless MODULE_HOOK_JUDGES_VISITS). The engine then skips the rule's traversal.
        Decide by `analysis.shape` only: the engine asks once per shape in a lint."""
        return not _trigger_types(cls).isdisjoint(analysis.shape[0])

    @classmethod
    def info(cls) -> RuleInfo:
        info = get_rule(cls.CODE)
        if info is None:
            raise LookupError(f"{cls.CODE} has no entry in rules/lint/")
        return info

    @classmethod
    def examples(cls) -> tuple[tuple[str, ...], tuple[Invalid, ...]]:
        info = cls.info()
        return info.valid, tuple(Invalid(e.code, e.line, e.fixed) for e in info.invalid)

    def scope(self):
        return self.analysis.scope_of(self.walk.function)

    @property
    def training(self) -> "Training":
        """The file's training structure (analysis/training.py), built once per lint."""
        return training_of(self.model)

    def gradient_flows(self) -> bool:
        """False inside no_grad/inference_mode, and in functions only called there."""
        if self.walk.in_no_grad:
            return False
        if self.walk.function is None:
            return True
        if any(f.name.value.startswith("test") for f in self.walk.functions) or \
                any(k.name.value.startswith("Test") for k in self.walk.classes):
            return False  # a test's reference computation: nothing is trained
        info = self.model.function(self.walk.qualname())
        return info is None or not self.model.only_called_without_grad(info)

    def report(
        self,
        node: cst.CSTNode,
        message: str | None = None,
        *,
        fix: FixSpec | None = None,
        related: Sequence[Related] = (),
        group: Related | None = None,
    ) -> None:
        """Flag `node` (its exact range). `message` defaults to the catalog's. Reports of
        this rule with the same `group.node` (one loss object called at many places) become
        one finding, at the first, with the others as related locations labelled `group.message`."""
        self._sink.add(self.CODE, node, message, fix, tuple(related), group)


@functools.cache
def types_besides_module(rule: type[Rule]) -> frozenset[str]:
    """Node types the rule handles, its block-level (Module) hook left out."""
    return handled_types(rule) - {"Module"}


@functools.cache
def _trigger_types(rule: type[Rule]) -> frozenset[str]:
    return types_besides_module(rule) if rule.MODULE_HOOK_JUDGES_VISITS else handled_types(rule)


@dataclass
class RuleContext:
    walk: WalkState
    model: "FileModel"
    analysis: "BlockAnalysis"
    values: "Values"
