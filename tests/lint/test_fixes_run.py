"""Fixes proven by running code: every runnable fixture (tests/lint/runnable/)
runs before and after all its fixes (unsafe ones included) on CPU; pyflakes
finds no new undefined name or redefinition in the fixed code, nor in torch's
own sources after every fix; TRN101's fix stops the growth of kept graphs;
TRN201 is true on the installed torch (runs that show it)."""

from __future__ import annotations

import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from casefiles import CONFIG, expected_lines, findings_of
from pyflakes import messages as pyflakes_messages

from traindoctor.lint import fix_source, lint_source

HERE = Path(__file__).parent
REPO = HERE.parents[1]
RUNNABLE = sorted((HERE / "runnable").glob("*.py"))
BROKEN = (pyflakes_messages.UndefinedName, pyflakes_messages.UndefinedLocal, pyflakes_messages.RedefinedWhileUnused,
          pyflakes_messages.ImportShadowedByLoopVar, pyflakes_messages.UndefinedExport)


def _run(path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, timeout=180,
                          cwd=path.parent)


def _broken_names(source: str) -> set[str]:
    """pyflakes' undefined names and redefinitions, without line numbers."""
    import pyflakes.checker
    import ast

    tree = ast.parse(source)
    checker = pyflakes.checker.Checker(tree, filename="x.py")
    return {f"{type(m).__name__}:{m.message_args}" for m in checker.messages if isinstance(m, BROKEN)}


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.stem)
def test_fixture_runs_before_and_after_every_fix(path: Path, tmp_path: Path):
    source = path.read_text(encoding="utf-8")
    assert findings_of(source, path=str(path)) == expected_lines(source)
    original = _run(path)
    assert original.returncode == 0, original.stderr
    fixed, _ = fix_source(source, str(path), CONFIG, unsafe=True)
    target = tmp_path / path.name
    target.write_text(fixed, encoding="utf-8")
    after = _run(target)
    assert after.returncode == 0, f"{fixed}\n{after.stderr}"
    assert _broken_names(fixed) <= _broken_names(source), fixed
    left = [f for f in lint_source(fixed, str(path), CONFIG).findings if f.fix is not None]
    assert left == []


def _graph_nodes(value: object) -> int:
    """Autograd nodes reachable from the tensors in `value` (what a kept graph costs)."""
    tensors = value if isinstance(value, (list, tuple)) else [value]
    seen: set[int] = set()
    stack = [t.grad_fn for t in tensors if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(next_fn for next_fn, _ in node.next_functions if next_fn is not None)
    return len(seen)


def test_trn101_fix_stops_the_graphs_from_growing(tmp_path: Path):
    path = HERE / "runnable" / "trn101_epoch_loss.py"
    before = runpy.run_path(str(path))
    assert _graph_nodes(before["TOTAL"]) > 20 and _graph_nodes(before["HISTORY"]) > 20  # one graph per step
    fixed, _ = fix_source(path.read_text(), str(path), CONFIG)  # safe fixes only
    target = tmp_path / path.name
    target.write_text(fixed)
    after = runpy.run_path(str(target))
    assert _graph_nodes(after["TOTAL"]) == 0 and _graph_nodes(after["HISTORY"]) == 0
    assert isinstance(after["TOTAL"], torch.Tensor)  # `.detach()`: the later `total_loss.item()` still works


def test_trn201_seeded_global_rng_workers_reproduce_and_are_not_flagged():
    path = HERE / "runnable" / "trn201_seeded_global_augmentation.py"
    assert [f for f in lint_source(path.read_text(), str(path), CONFIG).findings if f.code in ("TRN201", "TRN202")] == []
    first, second, other_seed = _run(path, "0"), _run(path, "0"), _run(path, "1")
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout and first.stdout.strip()  # the same batches, run to run
    assert other_seed.stdout != first.stdout  # and they do depend on the seed


def test_trn201_dataset_owned_rng_gives_identical_streams_and_is_flagged(tmp_path: Path):
    path = HERE / "runnable" / "trn201_owned_rng.py"
    findings = [f for f in lint_source(path.read_text(), str(path), CONFIG).findings if f.code == "TRN201"]
    assert len(findings) == 1 and "torch 2." in findings[0].message
    assert _run(path).stdout.strip() == "IDENTICAL"  # every worker draws the same stream
    assert findings[0].fix is not None and not findings[0].fix.safe
    fixed, _ = fix_source(path.read_text(), str(path), CONFIG, unsafe=True)
    (tmp_path / path.name).write_text(fixed)
    assert _run(tmp_path / path.name).stdout.strip() == "DISTINCT"


def test_examples_still_run_after_check_fix(tmp_path: Path):
    folder = tmp_path / "examples"
    shutil.copytree(REPO / "examples", folder, ignore=shutil.ignore_patterns("__pycache__", "tracebacks"))
    cli = subprocess.run([sys.executable, "-m", "traindoctor", "check", "--fix", str(folder)],
                         capture_output=True, text=True, timeout=300)
    assert "Fixed" in cli.stdout, cli.stdout + cli.stderr
    for script, args in (("train_classifier.py", ("--epochs", "1", "--workers", "0")), ("train_tagger.py", ())):
        ran = _run(folder / script, *args)
        assert ran.returncode == 0, f"{script}\n{ran.stderr}"


def test_pyflakes_clean_over_torch_sources_after_every_fix():
    """--fix --unsafe-fixes over torch.nn, torch.optim and torch.utils.data adds no
    undefined name and no redefinition."""
    root = Path(torch.__file__).parent
    changed = 0
    for path in sorted(p for sub in ("nn", "optim", "utils/data") for p in (root / sub).rglob("*.py")):
        source = path.read_text(encoding="utf-8", errors="replace")
        result = lint_source(source, str(path), CONFIG)
        if result.error or not any(f.fix for f in result.findings):
            continue
        fixed, _ = fix_source(source, str(path), CONFIG, unsafe=True)
        if fixed != source:
            changed += 1
            assert _broken_names(fixed) <= _broken_names(source), path


