"""The project index: every indexed file's summary (summary.py), module names <-> files,
and the resolution of the project's own imports, shared by `check` and the language server.

    index = ProjectIndex(summarize)            # summarize(path, text) -> FileSummary
    index.update(path, text) -> bool           # rebuilt; True when the summary changed
    index.set_summary(path, summary) -> bool   # a summary built elsewhere (a lint, a worker)
    index.imported_for(path, imports)          # ImportedFacts: what that file reads from the others
    index.dependants(path)                     # files that import it (through re-exports too)

A module name is the file's path below its project root (the nearest folder above it with
pyproject.toml, setup.py, setup.cfg or .git), or below `src/` there; a script's own folder
comes first, as on `sys.path` when it runs. Thread-safe: the language server builds it in
the background while lints read it.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from dataclasses import replace
from typing import Callable, Iterable

from .summary import (EMPTY_IMPORTS, Binding, ClassSummary, FileSummary, FunctionSummary, ImportedFacts,
                      ImportFact, OutgoingCall, Symbol, informative)

ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_DEPTH = 6  # re-export chains followed


def project_root(path: str) -> str:
    """The nearest folder above `path` holding a project marker; the file's folder when none."""
    return marked_root(path) or os.path.dirname(os.path.abspath(path))


def marked_root(path: str) -> str | None:
    """The nearest folder above `path` holding a project marker, or None."""
    current = os.path.dirname(os.path.abspath(path))
    while True:
        if any(os.path.exists(os.path.join(current, marker)) for marker in ROOT_MARKERS):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def module_candidates(importer: str, module: str, level: int, root: str | None = None) -> tuple[str, ...]:
    """The files an import may name, most likely first: relative to the importer's package
    for `from .x import`, else its own folder, the project root, `root/src`, and the folder
    holding the importer's own top-level package when the import names it (a repository without
    a project marker, run from its root)."""
    importer = os.path.abspath(importer)
    return _candidates(importer, module, level, "" if level else root or project_root(importer))


@functools.lru_cache(maxsize=1 << 14)
def _candidates(importer: str, module: str, level: int, root: str) -> tuple[str, ...]:
    """module_candidates once the project root is known ("" for a relative import): path arithmetic
    alone (no file system), so kept: a project's files ask for the same modules again and again."""
    parts = [p for p in module.split(".") if p]
    if level:
        base = os.path.dirname(importer)
        for _ in range(level - 1):
            base = os.path.dirname(base)
        bases = [base]
    else:
        bases = list(dict.fromkeys((os.path.dirname(importer), root, os.path.join(root, "src"))))
        if parts:  # `import pkg.models.utils` from a file inside `pkg/`: the folder that holds `pkg`
            folder = os.path.dirname(importer)
            while os.path.dirname(folder) != folder:
                if os.path.basename(folder) == parts[0] and os.path.dirname(folder) not in bases:
                    bases.append(os.path.dirname(folder))
                    break
                folder = os.path.dirname(folder)
    found = []
    for base in bases:
        target = os.path.join(base, *parts)
        if parts:
            found.append(target + ".py")
        found.append(os.path.join(target, "__init__.py"))
    return tuple(found)


class ProjectIndex:
    def __init__(self, summarize: Callable[[str, str], FileSummary]) -> None:
        self.summarize = summarize
        self._summaries: dict[str, FileSummary] = {}
        self._roots: dict[str, str] = {}  # folder -> its project root (memo)
        # Where the user's program starts, for a project without a marker (a research repository
        # extracted without .git, run as `python train.py` in its folder): check's folders and
        # working directory, the editor's workspace folders (set_base_folders).
        self._base_folders: tuple[str, ...] = ()
        self._lock = threading.RLock()
        self._saves: dict[str, tuple[tuple[str, str, str, str], ...]] | None = None
        self._no_grad_methods: dict[str, tuple[str, ...]] | None = None  # root -> method names (memo)
        self._training_methods: dict[str, tuple[str, ...]] | None = None  # root -> method names (memo)
        # root -> (base class, method, subclass) (memo)
        self._evaluating_overrides: dict[str, tuple[tuple[str, str, str], ...]] | None = None
        self._expansions: dict[tuple[str, str], FunctionSummary] = {}  # (file, function) -> expanded (memo)  # root -> saves (memo)
        self._bases_known: dict[tuple[str, str], bool] = {}  # (file, "class:" name) -> a model class by its bases
        self._incoming: dict[str, tuple] = {}  # file -> ImportedFacts.incoming of its functions (memo)
        self._calls_by_name: dict[str, list[tuple[str, OutgoingCall]]] | None = None  # last name -> calls (memo)

    # -- contents ------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._summaries)

    def __contains__(self, path: str) -> bool:
        return os.path.abspath(path) in self._summaries

    def paths(self) -> list[str]:
        with self._lock:
            return list(self._summaries)

    def summary(self, path: str) -> FileSummary | None:
        return self._summaries.get(os.path.abspath(path))

    def update(self, path: str, text: str) -> bool:
        """Rebuild the file's summary from `text`; True when it changed."""
        return self.set_summary(path, self.summarize(path, text))

    def set_summary(self, path: str, summary: FileSummary) -> bool:
        path = os.path.abspath(path)
        with self._lock:
            if self._summaries.get(path) == summary:
                return False
            self._summaries[path] = summary
            self._forget_derived()
            return True

    def remove(self, path: str) -> bool:
        with self._lock:
            self._forget_derived()
            return self._summaries.pop(os.path.abspath(path), None) is not None

    def set_base_folders(self, folders: Iterable[str]) -> None:
        """The folders the user works from (check's folders and working directory, the editor's
        workspace folders): the root of a file that no project marker sits above is the deepest
        of them that holds it, so `from module.x import Y` in `pkg/model.py` finds `module/x.py`
        beside `pkg/`, as it does for a program started there (`python train.py`)."""
        with self._lock:
            self._base_folders = tuple(dict.fromkeys(os.path.abspath(f) for f in folders))
            self._roots.clear()
            self._forget_derived()

    def _forget_derived(self) -> None:
        """Drop every memo built from the summaries and the roots (a file's summary changed, a file
        went, the roots moved): what a save writes, or a call resolves to, may depend on any file."""
        self._saves = None
        self._no_grad_methods = None
        self._training_methods = None
        self._evaluating_overrides = None
        self._expansions.clear()
        self._bases_known.clear()
        self._incoming.clear()
        self._calls_by_name = None

    def root_of(self, path: str) -> str:
        folder = os.path.dirname(os.path.abspath(path))
        found = self._roots.get(folder)
        if found is None:
            found = self._roots[folder] = marked_root(path) or self._base_holding(folder) or folder
        return found

    def _base_holding(self, folder: str) -> str | None:
        holding = [base for base in self._base_folders if folder == base or folder.startswith(base.rstrip(os.sep) + os.sep)]
        return max(holding, key=len) if holding else None

    # -- resolution ------------------------------------------------------------------

    def resolve(self, importer: str, module: str, level: int = 0) -> str | None:
        """The indexed file an import names, or None (a library, or not indexed)."""
        for candidate in module_candidates(importer, module, level, self.root_of(importer) if not level else None):
            if candidate in self._summaries and os.path.abspath(candidate) != os.path.abspath(importer):
                return candidate
        return None

    def missing(self, importer: str, imports: Iterable[ImportFact]) -> list[str]:
        """Files on disk that the imports name and the index lacks (for `check` to add)."""
        found = []
        for fact in imports:
            modules = [fact.module]
            if fact.name and fact.name != "*":
                modules.append(f"{fact.module}.{fact.name}" if fact.module else fact.name)
            for module in modules:
                if not module and not fact.level:
                    continue
                for candidate in module_candidates(importer, module, fact.level,
                                                   self.root_of(importer) if not fact.level else None):
                    if candidate in self._summaries:
                        break
                    if os.path.isfile(candidate):
                        found.append(candidate)
                        break
        return found

    def _symbol(self, path: str, name: str, depth: int = 0) -> Symbol | None:
        """`name` as module `path` defines or re-exports it."""
        summary = self._summaries.get(path)
        if summary is None or depth > _DEPTH:
            return None
        found = summary.symbol(name)
        if found is not None:
            return self._expanded(path, found)
        if name in summary.defined:
            return None  # bound there to something the summary does not describe: unknown
        for fact in summary.imports:
            if fact.local == name and fact.name and fact.name != "*":
                target = self.resolve(path, fact.module, fact.level)
                return self._symbol(target, fact.name, depth + 1) if target else None
        for fact in summary.imports:
            if fact.name == "*":
                target = self.resolve(path, fact.module, fact.level)
                if target and name in self._exported(target, depth + 1):
                    return self._symbol(target, name, depth + 1)
        return None

    def _expanded(self, path: str, symbol: Symbol, depth: int = 0) -> Symbol:
        """The symbol with what the functions and classes of other project modules it calls
        seed and draw from (a data manager building another file's sampler draws where the
        sampler does). Memoized until the index changes."""
        if isinstance(symbol, ClassSummary):
            methods = tuple(self._expanded(path, m, depth) for m in symbol.methods)
            module = symbol.module or self._module_base(path, symbol, depth)
            return replace(symbol, methods=methods, module=module) \
                if methods != symbol.methods or module != symbol.module else symbol
        if not isinstance(symbol, FunctionSummary) or not symbol.calls or depth > 3:
            return symbol
        key = (path, symbol.qualname)
        found = self._expansions.get(key)
        if found is not None:
            return found
        self._expansions[key] = symbol  # recursion guard
        summary = self._summaries.get(path)
        known = self._symbols_for(path, summary.imports) if summary is not None else {}
        seeds, draws = set(symbol.seeds), set(symbol.draws)
        for callee in symbol.calls:
            target = known.get(callee)
            if target is None and "." in callee:  # `Class.method` of an imported class
                owner = known.get(callee.rpartition(".")[0])
                target = owner.method(callee.rpartition(".")[2]) if isinstance(owner, ClassSummary) else None
            functions = target.methods if isinstance(target, ClassSummary) else \
                (target,) if isinstance(target, FunctionSummary) else ()
            for function in functions:
                seeds.update(function.seeds)
                draws.update(function.draws)
        result = replace(symbol, seeds=tuple(sorted(seeds)), draws=tuple(sorted(draws)))
        self._expansions[key] = result = result if result != symbol else symbol
        return result

    def _module_base(self, path: str, klass: ClassSummary, depth: int) -> bool:
        """A base of the class, in its own file or in another project file (as that file imports
        it), is an nn.Module: a subclass of a project model class is a model class too."""
        key = (path, "class:" + klass.name)
        if key in self._bases_known:
            return self._bases_known[key]
        if depth > 4 or not klass.bases or key in self._expansions:
            return bool(self._bases_known.get(key))
        self._expansions[key] = klass  # type: ignore[assignment]  # recursion guard
        summary = self._summaries.get(path)
        found = False
        try:
            known: dict[str, Symbol] | None = None
            for base in klass.bases if summary is not None else ():
                target = summary.symbol(base) if "." not in base else None  # type: ignore[union-attr]
                where = path
                if not isinstance(target, ClassSummary):
                    known = known if known is not None else self._symbols_for(path, summary.imports)  # type: ignore
                    target, where = known.get(base), ""
                if isinstance(target, ClassSummary) and target is not klass and \
                        (target.module or (where and self._module_base(where, target, depth + 1))):
                    found = True
                    break
        finally:
            del self._expansions[key]
        if depth == 0:
            self._bases_known[key] = found  # memoized until the index changes
        return found

    def _exported(self, path: str, depth: int = 0) -> dict[str, Symbol]:
        """What `from module import *` binds: `__all__`, else every public name."""
        summary = self._summaries.get(path)
        if summary is None or depth > _DEPTH:
            return {}
        found: dict[str, Symbol] = {}
        for fact in summary.imports:
            if fact.name == "*":
                target = self.resolve(path, fact.module, fact.level)
                if target:
                    found.update(self._exported(target, depth + 1))
            elif fact.name and not fact.local.startswith("_"):
                symbol = self._symbol(path, fact.local, depth)
                if symbol is not None:
                    found[fact.local] = symbol
        for symbol in (*summary.bindings, *summary.classes, *summary.functions):
            name = symbol.name if not isinstance(symbol, FunctionSummary) else symbol.qualname
            if not name.startswith("_"):
                found[name] = self._expanded(path, symbol)
        if summary.exports is not None:
            found = {name: symbol for name, symbol in found.items() if name in summary.exports}
        return found

    def _module_symbols(self, path: str) -> dict[str, Symbol]:
        """Every top-level symbol of a module, as `import module` reaches them."""
        found = self._exported(path)
        summary = self._summaries.get(path)
        if summary is not None:
            for symbol in (*summary.bindings, *summary.classes, *summary.functions):
                name = symbol.name if not isinstance(symbol, FunctionSummary) else symbol.qualname
                found.setdefault(name, self._expanded(path, symbol))
        return found

    def imported_for(self, path: str, imports: Iterable[ImportFact], text: str | None = None) -> ImportedFacts:
        """What the file at `path`, with these imports, reads from the rest of the project.
        With its `text`, only what it can read there: the functions and classes it calls or
        decorates with, the names it uses, and saves only where it loads (`check` lints again
        only the files this leaves something for)."""
        path = os.path.abspath(path)
        with self._lock:
            if not self._summaries:
                return EMPTY_IMPORTS
            spelled: dict[str, str] = {}
            imports = tuple(imports)
            symbols = self._symbols_for(path, imports, spelled)
            saves = tuple(s for s in self._project_saves(self.root_of(path)) if s[2] != path)
            no_grad_methods = self._project_no_grad_methods(self.root_of(path))
            training_methods = self._project_training_methods(self.root_of(path))
            overrides = self._project_evaluating_overrides(self.root_of(path))
            incoming = self._incoming_for(path)
            aliases: dict[str, str] = {}
            for fact in imports:
                target = self.resolve(path, fact.module, fact.level) if fact.name == "*" else None
                for local, full in self._exported_aliases(target).items() if target else ():
                    aliases.setdefault(local, full)
        if text is not None:
            symbols = {key: symbol for key, symbol in symbols.items() if _used(text, spelled[key], symbol)}
            saves = saves if "load(" in text else ()
            aliases = {local: full for local, full in aliases.items() if re.search(rf"(?<![\w.]){local}\.", text)}
            no_grad_methods = tuple(m for m in no_grad_methods if re.search(rf"\.{m}\s*\(", text))
            training_methods = tuple(m for m in training_methods if re.search(rf"\.{m}\s*\(", text))
            overrides = tuple(o for o in overrides if re.search(rf"\bclass\s+{o[0]}\b", text) and
                              re.search(rf"\bself\.{o[1]}\s*\(", text))
        return self._facts(symbols, saves, tuple(sorted(aliases.items())), no_grad_methods, training_methods,
                           overrides, incoming)

    def _symbols_for(self, path: str, imports: Iterable[ImportFact],
                     spelled: dict[str, str] | None = None) -> dict[str, Symbol]:
        """Each imported project symbol under the qualified name the file's code spells;
        `spelled` receives how the code writes each (its local name)."""
        symbols: dict[str, Symbol] = {}
        spelled = spelled if spelled is not None else {}

        def add(key: str, symbol: Symbol, local: str) -> None:
            if key not in symbols:
                symbols[key] = symbol
                spelled[key] = local

        for fact in imports:
            if fact.name == "*":
                target = self.resolve(path, fact.module, fact.level)
                if target:
                    for name, symbol in self._exported(target).items():
                        add(name, symbol, name)
            elif fact.name:
                # names.py qualifies `from m import n as a` as `m.n`; relative imports stay `a`
                key = f"{fact.module}.{fact.name}" if not fact.level and fact.module else fact.local
                target = self.resolve(path, fact.module, fact.level) if fact.module or fact.level else None
                symbol = self._symbol(target, fact.name) if target else None
                if symbol is not None:
                    symbols[key], spelled[key] = symbol, fact.local
                    continue
                sub = self.resolve(path, f"{fact.module}.{fact.name}" if fact.module else fact.name, fact.level)
                if sub:  # `from pkg import module`
                    for name, symbol in self._module_symbols(sub).items():
                        add(f"{key}.{name}", symbol, f"{fact.local}.{name}")
            else:
                target = self.resolve(path, fact.module, 0)
                if target:
                    for name, symbol in self._module_symbols(target).items():
                        add(f"{fact.module}.{name}", symbol, f"{fact.local}.{name}")
        return symbols

    @staticmethod
    def _facts(symbols: dict[str, Symbol], saves=(), aliases=(), no_grad_methods=(),
               training_methods=(), evaluating_overrides=(), incoming=()) -> ImportedFacts:
        plain = tuple(sorted(key for key, symbol in symbols.items()
                             if isinstance(symbol, FunctionSummary) and not informative(symbol)))
        symbols = {key: symbol for key, symbol in symbols.items() if informative(symbol)}
        if not symbols and not saves and not aliases and not plain and not no_grad_methods and \
                not training_methods and not evaluating_overrides and not incoming:
            return EMPTY_IMPORTS
        return ImportedFacts(tuple(sorted(symbols.items(), key=lambda item: item[0])), saves, aliases, plain,
                             tuple(no_grad_methods), tuple(training_methods), tuple(evaluating_overrides),
                             tuple(incoming))

    def _incoming_for(self, path: str) -> tuple:
        """ImportedFacts.incoming of the file at `path`: every call the other indexed files make of its
        top-level functions and classes (a class's call fills its `__init__`), found through their imports.
        Memoized until the index changes; only the calls whose last name the file defines are resolved."""
        found = self._incoming.get(path)
        if found is not None:
            return found
        summary = self._summaries.get(path)
        defined = {f.qualname for f in summary.functions} | {c.name for c in summary.classes} if summary else set()
        if self._calls_by_name is None:
            self._calls_by_name = {}
            for where, other in sorted(self._summaries.items()):  # the same facts whatever order files came in
                for call in other.outgoing:
                    self._calls_by_name.setdefault(call.callee.rsplit(".", 1)[-1], []).append((where, call))
        sites: dict[str, list] = {}
        for name in sorted(defined):
            for where, call in self._calls_by_name.get(name, ()):
                if where != path and self._defining(where, call.callee) == (path, name):
                    qualname = f"{name}.__init__" if isinstance(summary.symbol(name), ClassSummary) else name
                    sites.setdefault(qualname, []).extend(call.sites)
        found = self._incoming[path] = tuple(sorted((name, tuple(calls)) for name, calls in sites.items()))
        return found

    def _defining(self, importer: str, spelled: str, depth: int = 0) -> tuple[str, str] | None:
        """(file, name) of the module-level function or class that `spelled` names in `importer` (`fit`,
        `engine.fit`, `pkg.engine.fit`) through its imports and the re-exports of the files they name."""
        summary = self._summaries.get(importer)
        if summary is None or depth > _DEPTH:
            return None
        if depth and summary.symbol(spelled) is not None:
            return importer, spelled
        for fact in summary.imports:
            if fact.name == "*":
                target = self.resolve(importer, fact.module, fact.level)
                found = self._defining(target, spelled, depth + 1) if target and "." not in spelled else None
            elif fact.name and fact.local == spelled.partition(".")[0]:
                rest = spelled.partition(".")[2]
                target = self.resolve(importer, fact.module, fact.level) if fact.module or fact.level else None
                found = self._defining(target, fact.name + (f".{rest}" if rest else ""), depth + 1) \
                    if target else None
                if found is None and rest:  # `from pkg import engine`, then `engine.fit`
                    module = f"{fact.module}.{fact.name}" if fact.module else fact.name
                    sub = self.resolve(importer, module, fact.level)
                    found = self._defining(sub, rest, depth + 1) if sub else None
            elif not fact.name and spelled.startswith(fact.local + "."):
                target = self.resolve(importer, fact.module, 0)
                found = self._defining(target, spelled[len(fact.local) + 1:], depth + 1) if target else None
            else:
                continue
            if found is not None:
                return found
        return None

    def _exported_aliases(self, path: str, depth: int = 0) -> dict[str, str]:
        """The module aliases `from module import *` binds (`F` -> `torch.nn.functional`), through
        the module's own star imports; `__all__` limits them as it limits symbols."""
        summary = self._summaries.get(path)
        if summary is None or depth > _DEPTH:
            return {}
        found = {local: full for local, full in summary.aliases if not local.startswith("_")}
        for fact in summary.imports:
            target = self.resolve(path, fact.module, fact.level) if fact.name == "*" else None
            for local, full in self._exported_aliases(target, depth + 1).items() if target else ():
                found.setdefault(local, full)
        if summary.exports is not None:
            found = {local: full for local, full in found.items() if local in summary.exports}
        return found

    def _project_saves(self, root: str) -> tuple[tuple[str, str, str, str], ...]:
        if self._saves is None:
            by_root: dict[str, list[tuple[str, str, str, str]]] = {}
            for where, summary in self._summaries.items():
                for saved, kind, obj in summary.saves:
                    if kind.startswith("call:"):  # built by a class or factory of a third file
                        found = self._facts(self._symbols_for(where, summary.imports)).object_kind(kind[5:])
                        kind = "module" if found == "model" else ""
                    if kind:
                        by_root.setdefault(self.root_of(where), []).append((saved, kind, where, obj))
            self._saves = {r: tuple(sorted(v)) for r, v in by_root.items()}
        return self._saves.get(root, ())

    def _under(self, root: str) -> list[FileSummary]:
        """The summaries of the indexed files in `root` or below it (a repository without a project
        marker has a root per folder: its entry script's root holds the packages beneath it)."""
        prefix = root.rstrip(os.sep) + os.sep
        return [summary for where, summary in self._summaries.items() if where.startswith(prefix)]

    def _project_no_grad_methods(self, root: str) -> tuple[str, ...]:
        """The method names (not `forward`) that the project's classes define, each definition
        under a no_grad/inference_mode decorator: a call of one on a model whose class is not known
        here runs without autograd whichever of them the model is."""
        if self._no_grad_methods is None:
            self._no_grad_methods = {}
        if root not in self._no_grad_methods:
            seen: dict[str, bool] = {}
            for summary in self._under(root):
                for klass in summary.classes:
                    for method in klass.methods:
                        name = method.qualname.rsplit(".", 1)[-1]
                        seen[name] = seen.get(name, True) and method.no_grad
            self._no_grad_methods[root] = tuple(sorted(n for n, off in seen.items()
                                                       if off and n not in ("forward", "__call__")))
        return self._no_grad_methods[root]

    def _project_training_methods(self, root: str) -> tuple[str, ...]:
        """The method names (not `forward`) that some project class defines with a backward or an
        optimizer step in its body."""
        if self._training_methods is None:
            self._training_methods = {}
        if root not in self._training_methods:
            found = {m.qualname.rsplit(".", 1)[-1] for summary in self._under(root) for klass in summary.classes
                     for m in klass.methods if m.backward}
            self._training_methods[root] = tuple(sorted(found - {"forward", "__call__"}))
        return self._training_methods[root]

    def _project_evaluating_overrides(self, root: str) -> tuple[tuple[str, str, str], ...]:
        """(base, method, subclass): a project class derives from `base` through project classes
        and overrides `method` to put its own module in eval mode and run it with autograd on,
        while no project definition of `method` backpropagates or runs under no_grad. Classes are
        matched by their last name, as the bases spell them (`parlai.core.torch_agent.TorchAgent`)."""
        if self._evaluating_overrides is None:
            self._evaluating_overrides = {}
        if root not in self._evaluating_overrides:
            classes = [klass for summary in self._under(root) for klass in summary.classes]
            bases: dict[str, set[str]] = {}
            for klass in classes:
                bases.setdefault(klass.name, set()).update(b.rsplit(".", 1)[-1] for b in klass.bases)
            disqualified = {m.qualname.rsplit(".", 1)[-1] for klass in classes for m in klass.methods
                            if m.backward or m.no_grad}
            found: set[tuple[str, str, str]] = set()
            for klass in classes:
                evaluating = [m.qualname.rsplit(".", 1)[-1] for m in klass.methods if m.evaluates_own]
                evaluating = [m for m in evaluating if m not in disqualified and m not in ("forward", "__call__")]
                if not evaluating:
                    continue
                ancestors, todo = set(), list(bases.get(klass.name, ()))
                while todo:
                    base = todo.pop()
                    if base not in ancestors and base != klass.name:
                        ancestors.add(base)
                        todo.extend(bases.get(base, ()))
                found.update((base, method, klass.name) for base in ancestors if base in bases for method in evaluating)
            self._evaluating_overrides[root] = tuple(sorted(found))
        return self._evaluating_overrides[root]

    def dependants(self, path: str) -> set[str]:
        """Indexed files that import `path`, and those that import a file re-exporting it."""
        path = os.path.abspath(path)
        with self._lock:
            # target -> {importer: whether it binds the target's names (from-import or star),
            # through which a third file can reach them}
            importers: dict[str, dict[str, bool]] = {}
            for where, summary in self._summaries.items():
                for fact in summary.imports:
                    modules = [fact.module]
                    if fact.name and fact.name != "*":
                        modules.append(f"{fact.module}.{fact.name}" if fact.module else fact.name)
                    for module in modules:
                        target = self.resolve(where, module, fact.level) if module or fact.level else None
                        if target:
                            binds = importers.setdefault(target, {})
                            binds[where] = binds.get(where, False) or bool(fact.name)
            found: set[str] = set()
            todo = [path]
            while todo:
                for importer, binds in importers.get(todo.pop(), {}).items():
                    if importer not in found and importer != path:
                        found.add(importer)
                        if binds:
                            todo.append(importer)
            return found


def _used(text: str, local: str, symbol: Symbol) -> bool:
    """A function or class called or used as a decorator; a binding named twice (its import and a use)."""
    pattern = re.escape(local)
    if isinstance(symbol, Binding):
        return len(re.findall(rf"(?<![\w.]){pattern}\b", text)) >= 2
    return re.search(rf"(?<![\w.]){pattern}\s*\(|@\s*{pattern}\b", text) is not None


__all__ = ["Binding", "ClassSummary", "FunctionSummary", "ProjectIndex", "module_candidates", "project_root"]
