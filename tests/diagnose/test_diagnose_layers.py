"""diagnose/ is layered with no import circle (issue 28, point 8):

    markers, signatures, ... (ground) -> normalise -> parse -> select -> kinds -> engine -> the package

Every import a module makes, at the top, inside a function or under TYPE_CHECKING, goes to its
own layer or one below; and no set of modules imports each other in a loop. kinds/ counts as one
module (its hook modules import the package that loads them by name).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "server" / "traindoctor" / "diagnose"

LAYERS: list[tuple[str, set[str]]] = [
    ("ground", {"markers", "signatures", "environment", "calibration", "correlate", "record", "user_frame",
                "extract", "probe_values", "source", "render", "references"}),
    ("normalise", {"anchors", "normalize"}),
    ("parse", {"parse"}),
    ("select", {"select", "partial", "evidence_model"}),
    ("kinds", {"kinds", "probe_evidence"}),
    ("engine", {"engine"}),
    ("package", {"__init__"}),
]
LAYER_OF = {module: i for i, (_, modules) in enumerate(LAYERS) for module in modules}


def _module_of(path: Path) -> str:
    rel = path.relative_to(ROOT)
    return "kinds" if rel.parts[0] == "kinds" else rel.stem


def _imports(path: Path) -> set[str]:
    """The diagnose modules `path` imports, anywhere in it."""
    in_kinds = path.relative_to(ROOT).parts[0] == "kinds"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 0:
            if node.module and node.module.startswith("traindoctor.diagnose."):
                found.add(node.module.split(".")[2])
            continue
        depth = node.level - (1 if in_kinds else 0)  # levels above diagnose/
        if depth != 1:
            if depth == 0:
                found.add("kinds")  # `from . import x` inside kinds/
            continue
        if node.module:
            found.add(node.module.split(".")[0])
        else:
            found.update(alias.name for alias in node.names)
    return found


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in ROOT.rglob("*.py"):
        module = _module_of(path)
        graph.setdefault(module, set()).update(m for m in _imports(path) if m != module)
    return graph


def test_every_module_has_a_layer() -> None:
    assert set(_graph()) == set(LAYER_OF), set(_graph()) ^ set(LAYER_OF)


def test_imports_go_down_the_layers() -> None:
    up = [f"{m} ({LAYERS[LAYER_OF[m]][0]}) imports {d} ({LAYERS[LAYER_OF[d]][0]})"
          for m, deps in _graph().items() for d in deps if d in LAYER_OF and LAYER_OF[d] > LAYER_OF[m]]
    assert not up, up


def test_no_import_circle() -> None:
    graph = _graph()
    state: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for dep in sorted(graph.get(module, ())):
            if state.get(dep) == 1:
                circles.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, path + [dep])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not circles, circles


def test_the_checker_sees_a_circle() -> None:
    """The graph is read from the code: the engine's imports are there (no vacuous pass)."""
    graph = _graph()
    assert {"normalize", "parse", "select", "kinds"} <= graph["engine"]
    assert "markers" in graph["anchors"] and "normalize" not in graph["anchors"]
