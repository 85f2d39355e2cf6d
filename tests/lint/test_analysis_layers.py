"""lint/analysis/ is layered: names -> scopes and flow -> per-block facts -> the file
model -> values -> training queries. No module imports one that (transitively)
imports it back; lazy imports inside functions and TYPE_CHECKING imports count too."""

from __future__ import annotations

import ast
from pathlib import Path

import traindoctor.lint.analysis.names as names

PACKAGE = Path(names.__file__).parent
PREFIX = "traindoctor.lint.analysis"


def _imports(path: Path) -> set[str]:
    """Modules of the analysis package that `path` imports, anywhere in the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:  # from .x import y / from . import x
                if node.module:
                    found.add(node.module.split(".")[0])
                else:
                    found.update(alias.name for alias in node.names)
            elif node.level == 0 and (node.module or "").startswith(PREFIX + "."):
                found.add(node.module[len(PREFIX) + 1:].split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(a.name[len(PREFIX) + 1:].split(".")[0] for a in node.names
                         if a.name.startswith(PREFIX + "."))
    return found


def _graph() -> dict[str, set[str]]:
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    return {m: _imports(PACKAGE / f"{m}.py") & modules for m in modules}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        stack.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def test_analysis_has_no_import_circle():
    graph = _graph()
    assert {"collect", "model", "values", "training", "padding", "scopes"} <= set(graph)
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_layers_import_only_downwards():
    graph = _graph()
    order = ["names", "flow", "scopes", "events", "evaluation", "collect", "summary", "model", "project", "values", "training",
             "summarize"]
    for lower, upper in ((a, b) for i, a in enumerate(order) for b in order[i + 1:]):
        if lower in graph and upper in graph:
            assert upper not in graph[lower], f"{lower} imports {upper}, a layer above it"


def test_the_checker_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
