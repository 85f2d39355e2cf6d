"""Per-document lint state: the LintCache, the scheduled lint and its latest result.

Every edit bumps `generation`; a lint run only publishes if no edit arrived while it
ran, so the diagnostics on screen always belong to the text on screen. A run still
waiting out its debounce is cancelled outright; one already inside the engine
finishes in its thread and its result is dropped.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field

from lsprotocol import types as lsp

from ..config import Config
from ..lint import LintCache
from ..lint.notebook import NotebookProgram
from ..model import Finding
from .convert import Converter


@dataclass(frozen=True)
class LintSnapshot:
    """The result of one lint run and the exact text it was computed on."""

    generation: int
    version: int | None
    text: str
    config: Config
    findings: tuple[Finding, ...]
    diagnostics: tuple[lsp.Diagnostic, ...]
    converter: Converter = field(compare=False)
    error: str | None = None


@dataclass
class DocumentState:
    uri: str
    path: str | None  # None for untitled or non-file documents
    generation: int = 0
    scheduled: int = 0  # the generation of the last lint run that was started
    refresh_on_finish: bool = False  # a pull client must be told (server-side change)
    cache: LintCache = field(default_factory=LintCache)
    # The engine's cache is not safe to use from two threads at once.
    cache_lock: threading.Lock = field(default_factory=threading.Lock)
    pending: asyncio.Task | None = None
    latest: LintSnapshot | None = None
    waiters: list[tuple[int, asyncio.Future]] = field(default_factory=list)

    def bump(self) -> int:
        """A new text: cancel the run waiting to start and invalidate the one running."""
        self.generation += 1
        if self.pending is not None and not self.pending.done():
            self.pending.cancel()
        self.pending = None
        return self.generation

    def is_current(self, generation: int) -> bool:
        return generation == self.generation

    def finish(self, snapshot: LintSnapshot) -> None:
        self.latest = snapshot
        still_waiting = []
        for generation, waiter in self.waiters:
            if generation <= snapshot.generation:
                if not waiter.done():
                    waiter.set_result(snapshot)
            else:
                still_waiting.append((generation, waiter))
        self.waiters = still_waiting

    def wait_for(self, generation: int) -> asyncio.Future:
        """A future resolved with the first snapshot at least as new as `generation`."""
        future = asyncio.get_running_loop().create_future()
        if self.latest is not None and self.latest.generation >= generation:
            future.set_result(self.latest)
        else:
            self.waiters.append((generation, future))
        return future

    def close(self) -> None:
        self.bump()
        for _, waiter in self.waiters:
            if not waiter.done():
                waiter.cancel()
        self.waiters.clear()
        self.latest = None


@dataclass
class CellDocument(DocumentState):
    """A notebook cell: its lint runs are the notebook's (see `schedule`)."""

    notebook_uri: str = ""
    number: int = 0  # 1-based among all cells of the notebook, as the CLI counts them
    notebook: "NotebookState | None" = field(default=None, repr=False, compare=False)


@dataclass
class NotebookState:
    uri: str
    program_doc: DocumentState  # the cells as one program: generation, LintCache, pending run
    program: NotebookProgram | None = None  # what the latest run linted
    cells: dict[str, CellDocument] = field(default_factory=dict)
