"""A kind is one place: a YAML file under rules/signatures/ plus, where needed, one hooks module
under diagnose/kinds/. The engine and the probes -> evidence pass name no kind."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from traindoctor.diagnose.kinds import FALLBACK, hooks
from traindoctor.diagnose.signatures import kinds, load_signatures

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "server" / "traindoctor"
# The mechanisms every kind goes through: they must not know any kind by name.
GENERIC = [SERVER / "diagnose" / "engine.py", SERVER / "diagnose" / "probe_evidence.py",
           SERVER / "live" / "enrich.py", SERVER / "live" / "from_dap.py"]


def _strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string literal in `path` that is not a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_engine_and_live_pass_name_no_kind_and_no_signature() -> None:
    names = set(kinds()) | {s.id for s in load_signatures()}
    assert {"nan-inf", "cuda-oom", "other", "nan-value-error"} <= names  # the check can fail
    found = [f"{path.relative_to(ROOT)}:{line}: {text!r}" for path in GENERIC for line, text in _strings(path)
             if text in names or any(name in text for name in names if "-" in name)]
    assert found == []


def test_no_table_of_kinds_outside_the_registry() -> None:
    """No module keeps its own list of kinds (the old KINDS tuple, _NO_LOCATION_EXPECTED, a handler
    dict): a literal tuple, list, set or dict that names two kinds or more."""
    names = set(kinds())
    tables = []
    for path in sorted(SERVER.rglob("*.py")):
        if path.parent.name == "kinds":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
            if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) and items:
                named = [i.value for i in items if isinstance(i, ast.Constant) and i.value in names]
                if len(named) >= 2:
                    tables.append(f"{path.relative_to(ROOT)}:{node.lineno}: {named}")
    assert tables == []


def test_every_hooks_module_belongs_to_a_kind_and_uses_known_hooks() -> None:
    known = set(kinds())
    hook_names = {"derive", "refine", "enrich_live", "recognise_live"}
    for path in sorted((SERVER / "diagnose" / "kinds").glob("*.py")):
        if path.name == "__init__.py":
            continue
        kind = path.stem.replace("_", "-")
        assert kind in known, f"{path.name}: no signature file has kind {kind!r}"
        module = hooks(kind)
        public = {n for n, v in vars(module).items() if callable(v) and not n.startswith("_")
                  and getattr(v, "__module__", None) == module.__name__}
        assert public <= hook_names, f"{path.name}: {public - hook_names} are not hooks"
    assert hooks(FALLBACK) is not None and hooks("no-such-kind") is None


NEW_KIND = """\
signatures:
  - id: widget-overflow
    kind: widget-overflow
    mode: crash
    priority: 99
    confidence: 0.9
    patterns:
      - 'WidgetError: widget (?P<widget>\\w+) overflowed by (?P<amount>\\d+)'
    title:
      - 'Widget {widget} overflowed ({double} after doubling)'
    root_cause:
      - 'The widget {widget} held more than it can.'
    fixes:
      - title: 'Shrink {widget}'
        detail: 'Halve its size.'
"""

NEW_HOOKS = '''\
"""Hooks of the test-only `widget-overflow` kind."""
from traindoctor.diagnose.kinds import Failure, Live


def derive(facts, text):
    return {"double": 2 * int(facts["amount"])}


def refine(failure: Failure) -> None:
    failure.evidence.append(f"refined: {len(failure.lines)} log lines")


def enrich_live(live: Live) -> None:
    widgets = [t.name for t in live.probes.tensors if t.name.startswith("widget")]
    live.evidence.append("live widgets: " + ", ".join(widgets))
    live.notes.append(f"{len(widgets)} widget tensor(s) in the frame.")
'''

PROGRAM = """\
import json, sys
# A checkout installed in development mode maps traindoctor._rules to its own rules/: read the copy's.
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
from traindoctor.diagnose import KINDS, diagnose_text
from traindoctor.live.from_dap import diagnose_probes
from traindoctor.model import Probes, TensorSummary

text = 'Traceback (most recent call last):\\n  File "/w/train.py", line 4, in <module>\\n    grow()\\nWidgetError: widget gizmo overflowed by 21\\n'
probes = Probes(tensors=(TensorSummary("widget_a", (2,), "float32", "cpu"),))
plain = diagnose_text(text, correlate=False)
live = diagnose_probes(text, probes, correlate=False)
print(json.dumps({"kinds": list(KINDS), "plain": plain.to_json(), "live": live.to_json()}))
"""


def test_a_new_kind_is_one_yaml_file_and_one_hooks_module(tmp_path: Path) -> None:
    """Copy the package and its catalog, add a kind there (a signature file and a hooks module),
    touching nothing else: it is listed, diagnosed, refined and enriched by the live pass."""
    shutil.copytree(ROOT / "server", tmp_path / "server", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "rules", tmp_path / "rules")
    (tmp_path / "rules" / "signatures" / "widget_overflow.yaml").write_text(NEW_KIND)
    (tmp_path / "server" / "traindoctor" / "diagnose" / "kinds" / "widget_overflow.py").write_text(NEW_HOOKS)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "server")}
    result = subprocess.run([sys.executable, "-c", PROGRAM], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert "widget-overflow" in out["kinds"] and out["kinds"][-1] == FALLBACK
    plain, live = out["plain"], out["live"]
    assert plain["kind"] == live["kind"] == "widget-overflow"
    assert plain["title"] == "Widget gizmo overflowed (42 after doubling)"  # derive
    assert "refined: 4 log lines" in plain["evidence"]  # refine
    assert plain["fixes"][0]["title"] == "Shrink gizmo"
    assert "live widgets: widget_a" in live["evidence"]  # enrich_live, through the run/attach/LSP entry
    assert live["root_cause"].endswith("Live: 1 widget tensor(s) in the frame.")
    assert "live widgets: widget_a" not in plain["evidence"]
    # Nothing but the two new files differs from the checkout.
    for path in GENERIC:
        copy = tmp_path / path.relative_to(ROOT)
        assert copy.read_bytes() == path.read_bytes()
