"""Properties of linting and fixing over real source code nobody here wrote:
linting never raises, fixes always leave code that parses, and applying all
fixes twice equals applying them once."""

from __future__ import annotations

import ast
from pathlib import Path

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from traindoctor.config import Config
from traindoctor.lint import fix_source, lint_source
from traindoctor.lint.engine import all_rules

TORCH_SOURCES = sorted(p for p in Path(torch.__file__).parent.rglob("*.py") if p.stat().st_size < 60_000)
REPO = Path(__file__).resolve().parents[2]
OWN_CASES = sorted((REPO / "examples").glob("*.py")) + sorted((REPO / "tests" / "lint" / "cases").glob("*.py"))
CONFIG = Config()


def _check_fix_properties(source: str, path: str) -> None:
    result = lint_source(source, path, CONFIG)
    if result.error or not _parses(source):
        return  # what this Python cannot parse (torch ships 3.12-only files, `def f[T]()`) no fix can keep parsing
    fixed, _ = fix_source(source, path, CONFIG)
    ast.parse(fixed)
    again, applied = fix_source(fixed, path, CONFIG)
    assert again == fixed, f"second round of fixes changed {path}"
    assert applied == 0


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TORCH_SOURCES))
def test_torch_sources(path: Path):
    _check_fix_properties(path.read_text(encoding="utf-8", errors="replace"), str(path))


def test_own_examples_and_cases():
    for path in OWN_CASES:
        _check_fix_properties(path.read_text(encoding="utf-8"), str(path))


def test_rule_examples_combined():
    """All INVALID examples of all rules in one module: fixes must not collide."""
    source = "\n\n".join(example.code for rule in all_rules() for example in rule.info().invalid)
    try:
        ast.parse(source)
    except SyntaxError:
        return
    _check_fix_properties(source, "combined.py")


# Generated training loops: many shapes of accumulation, fixed or not.
_ACCUMULATIONS = st.sampled_from([
    "total += {v}", "total = total + {v}", "history.append({v})", "meter.update({v})", "stats['k'] += {v}",
    "total -= {v}", "self.total += {v}", "outs.extend([{v}])",
])
_VALUES = st.sampled_from([
    "loss", "loss.item()", "loss.detach()", "criterion(out, y)", "out", "model(x)", "loss * x.size(0)",
    "float(loss)", "(loss + aux)", "out.loss", "loss.data", "y", "F.cross_entropy(out, y)",
])
_WRAPPERS = st.sampled_from(["", "with torch.no_grad():\n", "if step % 10 == 0:\n"])


@settings(max_examples=100, deadline=None)
@given(_ACCUMULATIONS, _VALUES, _WRAPPERS, st.booleans())
def test_generated_loops(accumulation: str, value: str, wrapper: str, in_function: bool):
    statement = accumulation.format(v=value)
    body = f"    {wrapper}        {statement}\n" if wrapper else f"    {statement}\n"
    loop = (
        "for step, (x, y) in enumerate(loader):\n"
        "    out = model(x)\n"
        "    loss = criterion(out, y)\n"
        "    loss.backward()\n"
        "    optimizer.step()\n" + body
    )
    source = "import torch\nimport torch.nn.functional as F\ntotal = 0\n"
    if in_function:
        source += "def train(self, loader):\n" + "".join("    " + line + "\n" for line in loop.splitlines())
    else:
        source += loop
    ast.parse(source)
    result = lint_source(source, "gen.py", CONFIG)
    assert result.error is None
    _check_fix_properties(source, "gen.py")
    if "no_grad" in wrapper or value in ("loss.item()", "loss.detach()", "float(loss)", "loss.data", "y"):
        assert not [f for f in result.findings if f.code == "TRN101"], source
