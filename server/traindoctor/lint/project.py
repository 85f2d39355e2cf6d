"""Project summaries from source text, and the project index `check` and the language
server share (analysis/project.py holds it; analysis/summarize.py says what a summary holds).

    index = new_index()
    index.update(path, text)                      # summarize_source, kept when it changed
    lint_source(text, path, config, cache, project=index)

`check` builds the summaries in its worker pool (`summarize_file`), then hands each
worker the facts its file reads (`Imported`), so that the rules run in parallel too.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from .analysis.evaluation import evaluated_parameters
from .analysis.meters import returned_from_params
from .analysis.model import FileModel
from .analysis.names import Names
from .analysis.project import ProjectIndex
from .analysis.summarize import summarize_model
from .analysis.vocab import vocab
from .analysis.summary import (EMPTY_IMPORTS, EMPTY_SUMMARY, AskedFacts, ClassSummary, FileSummary, FunctionSummary,
                               ImportedFacts, ImportFact)
from .api import MAX_BYTES, read_source
from .engine import LintCache, LintError, collector_paused

# `check` indexes the project files its checked files import, up to this many more files.
MAX_EXTRA_FILES = 300
# A file that mentions none of these has no fact another file reads beyond its names.
_ANALYSED_WORDS = ("torch", "random", "seed")


def summarize_source(path: str, text: str) -> FileSummary:
    """The file's summary; a file that mentions neither torch nor randomness only re-exports
    (its imports, `__all__` and names are read with `ast`, ten times cheaper than the full
    analysis)."""
    if len(text) > MAX_BYTES or "\x00" in text:
        return EMPTY_SUMMARY
    if not any(word in text for word in _ANALYSED_WORDS):
        return _plain_summary(text)
    cache = LintCache()
    try:
        with collector_paused():
            blocks = cache.splitter.split(text)
            try:
                parsed = cache.blocks_for(blocks)
            except LintError:
                parsed = cache.blocks_for(cache.splitter.split(text, exactly=True))
            names = Names(tuple(alias for p in parsed for alias in p.aliases))
            model = FileModel(names, [p.analysis(names) for p in parsed], None, path)
            try:
                return summarize_model(model)
            finally:
                model.lint_done()
    except (LintError, RecursionError, Exception):  # noqa: BLE001 - a file that cannot be read says nothing
        return _plain_summary(text)


def summarize_file(path: str) -> tuple[str, FileSummary]:
    try:
        return path, summarize_source(path, read_source(Path(path)))
    except LintError:
        return path, EMPTY_SUMMARY


def _plain_summary(text: str) -> FileSummary:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return EMPTY_SUMMARY
    imports: list[ImportFact] = []
    defined: set[str] = set()
    exports = None
    aliases: dict[str, str] = {}  # as names.py qualifies: absolute imports only
    classes: list[ClassSummary] = []
    functions: list[FunctionSummary] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                imports.append(ImportFact(alias.asname or alias.name, alias.name, ""))
                defined.add((alias.asname or alias.name).split(".")[0])
                aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                    alias.name.split(".")[0]
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if alias.name == "*":
                    imports.append(ImportFact("*", stmt.module or "", "*", stmt.level))
                else:
                    imports.append(ImportFact(alias.asname or alias.name, stmt.module or "", alias.name, stmt.level))
                    if not stmt.level and stmt.module:
                        aliases[alias.asname or alias.name] = f"{stmt.module}.{alias.name}"
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(stmt.name)
            told = _tensor_helper_summary(text, stmt) or _evaluation_helper_summary(text, stmt) \
                if isinstance(stmt, ast.FunctionDef) else None
            if told is not None:
                functions.append(told)
            if isinstance(stmt, ast.ClassDef):  # its bases: a chain of model classes may pass through it
                bases = tuple(_qualified_base(b, aliases) for b in stmt.bases)
                classes.append(ClassSummary(stmt.name, tuple(b for b in bases if b)))
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    defined.add(target.id)
                    if target.id == "__all__" and isinstance(stmt.value, (ast.List, ast.Tuple)):
                        exports = tuple(e.value for e in stmt.value.elts
                                        if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return FileSummary(functions=tuple(functions), classes=tuple(classes), imports=tuple(imports), exports=exports,
                       defined=tuple(sorted(defined)))


def _tensor_helper_summary(text: str, function: ast.FunctionDef) -> FunctionSummary | None:
    """A torch-free file's function that returns a tensor computed from its parameters
    (`return x.max(dim=1)[0].mean()`: tensors come in from its callers): the full analysis of that
    one function (meters.py), for the few whose returns are computations."""
    if not any(isinstance(n, ast.Return) and isinstance(n.value, (ast.Call, ast.Subscript, ast.BinOp))
               for n in ast.walk(function)):
        return None
    segment = ast.get_source_segment(text, function)
    try:
        parsed = cst.parse_module(segment or "").body
    except cst.ParserSyntaxError:
        return None
    node = parsed[0] if parsed and isinstance(parsed[0], cst.FunctionDef) else None
    if node is None:
        return None
    params = tuple(p.name.value for p in node.params.params)
    sources = returned_from_params(node, params)
    return FunctionSummary(function.name, params, returns_from=sources) if sources else None


def _evaluation_helper_summary(text: str, function: ast.FunctionDef) -> FunctionSummary | None:
    """A torch-free file's function that runs a parameter over a loop (`for x, y in loader: out =
    model(x)`) and trains nothing: the models come in from its callers (analysis/evaluation.py). This
    file is not linted, so a `model.eval()` of its own raises no finding here: the call site reports."""
    params = tuple(a.arg for a in function.args.args)
    loops = [n for n in ast.walk(function) if isinstance(n, (ast.For, ast.While, ast.comprehension))]
    if not loops or not any(isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute)) and
                            (n.func.id if isinstance(n.func, ast.Name) else getattr(n.func.value, "id", "")) in params
                            for loop in loops for n in ast.walk(loop)):
        return None
    segment = ast.get_source_segment(text, function) or ""
    if any(word in segment for word in (".step(", *vocab().training_wants_grad_words)):
        return None
    try:
        parsed = cst.parse_module(segment).body
    except cst.ParserSyntaxError:
        return None
    node = parsed[0] if parsed and isinstance(parsed[0], cst.FunctionDef) else None
    evaluates = evaluated_parameters(node, params, Names(()), own_switches=True) if node is not None else ()
    return FunctionSummary(function.name, params, evaluates=evaluates) if evaluates else None


def _qualified_base(node: ast.expr, aliases: dict[str, str]) -> str:
    """`nn.Module` -> `torch.nn.Module` through the file's absolute imports (names.py's rule)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    head = aliases.get(node.id, node.id)
    return ".".join([head, *reversed(parts)])


class _Index(ProjectIndex):
    wants_summary = True  # a lint through the index leaves the text's summary in its LintCache


def new_index(base_folders: Iterable[str] = ()) -> ProjectIndex:
    """An empty index; `base_folders`: ProjectIndex.set_base_folders."""
    index = _Index(summarize_source)
    index.set_base_folders(base_folders)
    return index


class Asking:
    """check's first lint of a file: no project facts yet, the questions noted (AskedFacts)."""

    wants_summary = True

    def __init__(self) -> None:
        self.facts = AskedFacts()

    def imported_for(self, path: str, imports) -> ImportedFacts:
        return self.facts


@dataclass(frozen=True)
class Imported:
    """Facts computed beforehand for one file (check's workers get them with the job);
    `wants_summary`: the lint leaves the file's own summary in its LintCache."""

    facts: ImportedFacts = EMPTY_IMPORTS
    wants_summary: bool = False

    def imported_for(self, path: str, imports) -> ImportedFacts:
        return self.facts


def index_for_check(paths: list[str], run_parallel, index: ProjectIndex | None = None) -> ProjectIndex:
    """The index of the checked files and the project files they import (bounded by
    MAX_EXTRA_FILES). `run_parallel(function, items)` maps in check's worker pool. Files
    `index` already holds (summarized by their lint) are not summarized again."""
    index = index if index is not None else new_index()
    todo = [os.path.abspath(p) for p in paths if p.endswith(".py")]
    extra = 0
    seen: set[str] = set()
    while todo:
        batch = [p for p in dict.fromkeys(todo) if p not in seen]
        seen.update(batch)
        for path, summary in run_parallel(summarize_file, [p for p in batch if p not in index]):
            index.set_summary(path, summary)
        todo = []
        for path in batch:
            summary = index.summary(path)
            if summary is None or not summary.imports:
                continue
            for missing in index.missing(path, summary.imports):
                if missing not in seen and extra < MAX_EXTRA_FILES:
                    todo.append(missing)
                    extra += 1
    return index
