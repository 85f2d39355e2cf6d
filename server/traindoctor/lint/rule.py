"""The shape of a rule: one class, its own examples, its own fix.

A rule is a libcst `BatchableCSTVisitor`; the engine runs every rule over a
block in one traversal. A rule that needs facts from the whole file (a seed
call, a dataset class, a pad value defined elsewhere) declares a `Collector`,
which runs over every block first; its records are merged into `FileFacts`.

Each rule carries `VALID` snippets (must not fire) and `INVALID` examples
(must fire, and where given, the fix must produce `fixed`). The test suite
turns them into tests, so a rule and its proof never drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Hashable, Sequence, Union

import libcst as cst

from ..catalog import RuleInfo, get_rule
from .context import FileFacts, WalkState

if TYPE_CHECKING:
    from .engine import ReportSink


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
class Invalid:
    """An example the rule must flag. `line` (1-based) pins the finding;
    `fixed`, when given, is the whole snippet after applying every fix."""

    code: str
    line: int | None = None
    fixed: str | None = None


# --- Rules and collectors -----------------------------------------------------


class FactCollector(cst.BatchableCSTVisitor):
    """Records file-wide facts from one block. Records must be hashable."""

    def __init__(self, walk: WalkState, records: list[tuple[str, Hashable]]) -> None:
        super().__init__()
        self.walk = walk
        self.facts = walk.facts  # import aliases of the whole file (top level)
        self._records = records

    def add(self, kind: str, value: Hashable = True) -> None:
        self._records.append((kind, value))


class Rule(cst.BatchableCSTVisitor):
    CODE: ClassVar[str]
    Collector: ClassVar[type[FactCollector] | None] = None
    VALID: ClassVar[Sequence[str]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()

    def __init__(self, walk: WalkState, sink: "ReportSink") -> None:
        super().__init__()
        self.walk = walk
        self.facts: FileFacts = walk.facts
        self._sink = sink

    @classmethod
    def info(cls) -> RuleInfo:
        info = get_rule(cls.CODE)
        if info is None:
            raise LookupError(f"{cls.CODE} has no entry in rules/lint/")
        return info

    def report(
        self,
        node: cst.CSTNode,
        message: str | None = None,
        *,
        fix: FixSpec | None = None,
        related: Sequence[Related] = (),
    ) -> None:
        """Flag `node` (its exact range). `message` defaults to the catalog's."""
        self._sink.add(self.CODE, node, message, fix, tuple(related))
