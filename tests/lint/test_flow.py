"""The control-flow graph (analysis/flow.py) and what TRN101 asks of it: "rebound every
iteration" means rebound on every path around the loop."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from traindoctor.config import Config
from traindoctor.lint import lint_source
from traindoctor.lint.analysis.flow import FlowGraph

CONFIG = Config()


def _graph(source: str) -> tuple[FlowGraph, dict[str, cst.CSTNode]]:
    """The graph of the first function, and its small statements by their code."""
    module = cst.parse_module(textwrap.dedent(source))
    function = next(s for s in module.body if isinstance(s, cst.FunctionDef))
    graph = FlowGraph(function.body.body)
    by_code = {module.code_for_node(n).strip(): n for n in graph.nodes if not isinstance(
        n, (cst.If, cst.For, cst.While, cst.With, cst.Try, cst.Match, cst.MatchCase, cst.ExceptHandler))}
    return graph, by_code


def _reaching(source: str, use: str, name: str) -> set[str]:
    graph, stmts = _graph(source)
    module = cst.Module(body=[])
    return {module.code_for_node(n).strip() for n in graph.reaching(stmts[use], name)}


def test_a_reset_under_if_does_not_stop_the_accumulation():
    source = """
    def train(loader):
        total = 0
        for step, batch in enumerate(loader):
            if step % 100 == 0:
                total = 0
            total += batch
    """
    graph, stmts = _graph(source)
    assert graph.survives_iteration(stmts["total += batch"], "total")
    assert _reaching(source, "total += batch", "total") == {"total = 0", "total += batch"}


def test_an_unconditional_reset_does():
    graph, stmts = _graph("""
    def train(loader):
        for batch in loader:
            total = 0
            total += batch
    """)
    assert not graph.survives_iteration(stmts["total += batch"], "total")


def test_continue_before_the_reset_lets_the_sum_through():
    graph, stmts = _graph("""
    def train(loader):
        for batch in loader:
            total += batch
            if batch is None:
                continue
            total = 0
    """)
    assert graph.survives_iteration(stmts["total += batch"], "total")


def test_break_leaves_the_loop():
    graph, stmts = _graph("""
    def train(loader):
        total = 0
        for batch in loader:
            total += batch
            total = 0
            if batch:
                break
        return total
    """)
    assert not graph.survives_iteration(stmts["total += batch"], "total")
    assert _reaching("""
    def train(loader):
        total = 0
        for batch in loader:
            total += batch
            total = 0
            if batch:
                break
        return total
    """, "return total", "total") == {"total = 0"}


def test_a_handler_is_entered_before_the_reset_completes():
    source = """
    def train(loader):
        for batch in loader:
            try:
                total += batch
                total = 0
            except ValueError:
                continue
    """
    graph, stmts = _graph(source)
    assert graph.survives_iteration(stmts["total += batch"], "total")  # `total = 0` may raise before it binds


def test_finally_always_resets():
    graph, stmts = _graph("""
    def train(loader):
        for batch in loader:
            try:
                total += batch
            finally:
                total = 0
    """)
    assert not graph.survives_iteration(stmts["total += batch"], "total")


def test_with_binds_and_match_cases_may_not_match():
    source = """
    def train(loader, ctx):
        for batch in loader:
            match batch:
                case {"reset": True}:
                    total = 0
                case _:
                    total = 1
            total += batch
        with ctx as total:
            print(total)
    """
    graph, stmts = _graph(source)
    assert not graph.survives_iteration(stmts["total += batch"], "total")  # `case _` always matches
    [definition] = graph.reaching(stmts["print(total)"], "total")
    assert isinstance(definition, cst.With)


def test_match_without_a_catch_all_may_fall_through():
    graph, stmts = _graph("""
    def train(loader):
        for batch in loader:
            match batch:
                case {"reset": True}:
                    total = 0
            total += batch
    """)
    assert graph.survives_iteration(stmts["total += batch"], "total")


def test_comprehension_variables_are_their_own_but_a_walrus_binds():
    graph, stmts = _graph("""
    def train(loader):
        for batch in loader:
            parts = [total for total in batch]
            total += batch
            if (total := 0) is None:
                pass
    """)
    assert not graph.survives_iteration(stmts["total += batch"], "total")
    graph, stmts = _graph("""
    def train(loader):
        for batch in loader:
            parts = [total for total in batch]
            total += batch
    """)
    assert graph.survives_iteration(stmts["total += batch"], "total")


def test_while_true_exits_only_by_break():
    source = """
    def train(it):
        total = 1
        while True:
            total = 2
            if total:
                break
        return total
    """
    assert _reaching(source, "return total", "total") == {"total = 2"}


# -- TRN101 on real shapes ----------------------------------------------------------------

_FAQ = '''
import torch
import torch.nn.functional as F


def train(model, loader, optimizer, log_every=100):
    model.train()
    total_loss = 0
    for step, (x, y) in enumerate(loader):
        if step % log_every == 0:
            print(total_loss / log_every)
            total_loss = 0
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss
'''

_HF = '''
import torch
from transformers import AutoModelForSequenceClassification

model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)


def train(loader, log_every=50):
    train_loss = 0.0
    for step, batch in enumerate(loader):
        output = model(**batch)
        output.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        train_loss += output.loss
        if step % log_every == log_every - 1:
            print(train_loss / log_every)
            train_loss = 0.0
'''


@pytest.mark.parametrize("source", [_FAQ, _HF], ids=["faq-reset-under-if", "hf-output-loss"])
def test_trn101_fires_when_the_total_is_reset_only_under_an_if(source):
    found = [f for f in lint_source(source, "t.py", CONFIG).findings if f.code == "TRN101"]
    assert len(found) == 1
    assert "`total_loss` sums the loss" in found[0].message or "`train_loss` sums the loss" in found[0].message


@pytest.mark.parametrize("source", [_FAQ, _HF], ids=["faq", "hf"])
def test_trn101_quiet_when_the_reset_runs_every_iteration(source):
    fixed = source.replace("if step % log_every == 0:", "if True:").replace(
        "if step % log_every == log_every - 1:", "if True:")
    if source is _FAQ:  # the reset comes before the sum: the sum of one step only
        fixed = source.replace("        if step % log_every == 0:\n            print(total_loss / log_every)\n"
                               "            total_loss = 0\n", "        total_loss = 0\n")
    else:
        fixed = source.replace("        if step % log_every == log_every - 1:\n            print(train_loss / log_every)\n"
                               "            train_loss = 0.0\n", "        train_loss = 0.0\n")
    assert fixed != source
    assert not [f for f in lint_source(fixed, "t.py", CONFIG).findings if f.code == "TRN101"]


def test_trn101_quiet_on_a_running_loss_reset_with_each_accumulated_step():
    """Gradient accumulation: the sum lives for one optimizer step's window, reset with the step."""
    source = _FAQ.replace("        if step % log_every == 0:\n            print(total_loss / log_every)\n"
                          "            total_loss = 0\n", "").replace(
        "        optimizer.step()\n        total_loss += loss\n",
        "        total_loss += loss\n        if (step + 1) % 4 == 0:\n            optimizer.step()\n"
        "            print(total_loss.item())\n            total_loss = 0\n")
    assert "optimizer.step()\n            print" in source
    assert not [f for f in lint_source(source, "t.py", CONFIG).findings if f.code == "TRN101"]
