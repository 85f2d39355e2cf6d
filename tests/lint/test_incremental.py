"""Incremental linting gives exactly what linting from scratch gives.

Random line edits (insert, delete, replace, indent) on real training code and
on torch's own sources: the incremental block split must equal a full split
whenever the text parses, and the findings of a warm cache must equal those of
a cold one."""

from __future__ import annotations

import ast
from pathlib import Path

import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from traindoctor.config import Config
from traindoctor.lint import LintCache, lint_source
from traindoctor.lint.blocks import RUN_LENGTH, BlockSplitter, SourceSyntaxError, split_blocks

REPO = Path(__file__).resolve().parents[2]
SOURCES = [REPO / "examples" / "train_classifier.py", REPO / "examples" / "train_tagger.py",
           Path(torch.__file__).parent / "optim" / "sgd.py"] + sorted((REPO / "tests/lint/cases").glob("*.py"))[:6]
SNIPPETS = ["    total += loss\n", "x = 1\n", "\n", "# comment\n", "def f():\n", "        pass\n",
            "@torch.no_grad()\n", "import numpy as np\n", "    return x\n", "'''\n", "class A:\n", "    y = (1,\n"]

edit = st.tuples(st.sampled_from(["insert", "delete", "replace", "indent"]), st.integers(0, 10_000),
                 st.sampled_from(SNIPPETS))


def _apply(lines: list[str], change: tuple[str, int, str]) -> list[str]:
    kind, at, snippet = change
    at = at % (len(lines) + 1)
    lines = list(lines)
    if kind == "insert":
        lines.insert(at, snippet)
    elif lines and at < len(lines):
        if kind == "delete":
            del lines[at]
        elif kind == "replace":
            lines[at] = snippet
        else:
            lines[at] = "    " + lines[at]
    return lines


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SOURCES), st.lists(edit, min_size=1, max_size=6))
# Found by Hypothesis: deleting the last code lines leaves blank lines alone in the re-split region,
# which a full split attaches to the block before them.
@example(SOURCES[1], [("delete", 1176, "x = 1\n"), ("insert", 0, "x = 1\n"), ("delete", 1176, "x = 1\n")])
def test_incremental_split_and_findings_match_cold(path: Path, edits):
    lines = path.read_text().splitlines(keepends=True)
    splitter = BlockSplitter()
    cache = LintCache()
    config = Config()
    splitter.split("".join(lines))
    lint_source("".join(lines), str(path), config, cache)
    for change in edits:
        lines = _apply(lines, change)
        text = "".join(lines)
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):
            try:
                splitter.split(text)
            except SourceSyntaxError:
                pass
            lint_source(text, str(path), config, cache)
            continue
        assert splitter.split(text) == split_blocks(text)
        warm = lint_source(text, str(path), config, cache)
        cold = lint_source(text, str(path), config, LintCache())
        assert warm == cold


def test_identical_blocks_stay_distinct_trees():
    """Found by the property test: a second `import numpy as np` block, the same
    text as an earlier one, once shared its parse tree with it, and TRN201's
    fix then anchored its inserted helper at the wrong import."""
    path = REPO / "examples" / "train_classifier.py"
    lines = path.read_text().splitlines(keepends=True)
    cache, config = LintCache(), Config()
    lint_source("".join(lines), str(path), config, cache)
    for change in [("insert", 0, "x = 1\n"), ("insert", 0, "x = 1\n"), ("insert", 215, "import numpy as np\n")]:
        lines = _apply(lines, change)
        warm = lint_source("".join(lines), str(path), config, cache)
    assert warm == lint_source("".join(lines), str(path), config, LintCache())


SCRIPT = """import torch
import torch.nn as nn

model = nn.Linear(4, 2)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def evaluate(loader):
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
    return correct


total = 0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    total += loss
"""


def _runs(cache: LintCache, source: str) -> list[str]:
    cache.runs = []
    lint_source(source, "script.py", Config(), cache)
    return cache.runs


def test_edit_inside_a_top_level_loop_reruns_only_that_block():
    """Each rule's results are cached per block under the fact categories it reads:
    editing the training loop's body re-runs the rules of that block only."""
    cache = LintCache()
    every_rule = _runs(cache, SCRIPT)
    assert len(every_rule) >= 6 * 6  # six blocks, every rule ran on each
    edited = SCRIPT.replace("    total += loss\n", "    total += loss.item()\n")
    reran = _runs(cache, edited)
    assert sorted(reran) == sorted(set(every_rule)), reran  # each rule once: the edited block
    assert lint_source(edited, "script.py", Config(), cache) == lint_source(edited, "script.py", Config())


def test_a_new_seed_call_reruns_only_the_rules_that_read_seeding_facts():
    cache = LintCache()
    _runs(cache, SCRIPT)
    seeded = SCRIPT.replace("    correct = 0\n", "    torch.manual_seed(0)\n    correct = 0\n")
    reran = _runs(cache, seeded)
    blocks = len(split_blocks(seeded))
    assert reran.count("TRN201") == blocks and reran.count("TRN202") == blocks
    assert reran.count("TRN101") == 1 and reran.count("TRN401") == 1  # the edited function only


def test_a_constructor_edited_in_place_changes_the_object_facts_only_then():
    """Object facts compare their constructors as source (not rendered text): new arguments
    must still count as a change, so that rules reading objects in other blocks run again."""
    cache = LintCache()
    lint_source(SCRIPT, "script.py", Config(), cache)
    assert cache.model is not None
    before = cache.model.versions["objects"]
    edited = SCRIPT.replace("nn.CrossEntropyLoss()", "nn.CrossEntropyLoss(reduction='sum')")
    lint_source(edited, "script.py", Config(), cache)
    assert cache.model.versions["objects"] == before + 1
    lint_source(edited.replace("    total += loss\n", "    total += loss.item()\n"), "script.py", Config(), cache)
    assert cache.model.versions["objects"] == before + 1


def test_an_edit_in_a_run_of_simple_statements_reparses_that_run_only():
    """Top-level simple statements share a block (a run); an edit re-splits and re-parses
    the runs it touches and leaves the others' trees as they were."""
    source = "import torch\n" + "".join(f"x_{n} = torch.zeros({n})\n" for n in range(400))
    cache = LintCache()
    lint_source(source, "script.py", Config(), cache)
    before = {id(p.module) for p in cache.blocks_for(cache.splitter.split(source))}
    edited = source.replace("x_200 = torch.zeros(200)\n", "x_200 = torch.ones(200)\n")
    after = cache.blocks_for(cache.splitter.split(edited))
    assert 400 // RUN_LENGTH // 2 < len(after) < 400 // RUN_LENGTH * 2
    assert sum(id(p.module) not in before for p in after) == 1
    assert cache.splitter.split(edited) == split_blocks(edited)
