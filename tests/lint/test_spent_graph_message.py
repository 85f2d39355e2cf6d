"""TRN101 on a loss whose own backward runs in the same iteration, after the sum or before it, says what
stays alive: backward (without retain_graph) frees the graph's saved activations, but the sum chains every
iteration's autograd nodes, so memory grows each step without bound (rules/trn101: `_spent`, walks back and
on over flow.py's graph). The
finding stays: the PyTorch FAQ's `total_loss += loss` is this shape, and real fixes of it are in the
bug-fix benchmark; only its claim of kept activations and CUDA OOM was wrong (RexYing/diffpool train.py,
h/prec9's group A).

Look-alikes that keep the activations claim: a backward with retain_graph=True, a backward only on some
paths (before the sum or after it), and a loss rebound between the two. The torch facts are checked: after
backward the activations are freed while the chain of nodes grows, whether the sum came first or not; with
retain_graph they stay."""

from __future__ import annotations

import gc
import weakref

import torch

from traindoctor.config import Config
from traindoctor.lint import lint_source

STRICT = Config(select=("strict",))

LOOP = """\
import torch
from torch import nn


def train(model, loader, epochs, warmup):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        avg_loss = 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
{body}
        print(avg_loss / len(loader))
"""

SPENT = "            loss.backward()\n            optimizer.step()\n            avg_loss += loss"
SPENT_SCALED = "            (loss / 4).backward()\n            optimizer.step()\n            avg_loss += loss"
RETAINED = "            loss.backward(retain_graph=True)\n            optimizer.step()\n            avg_loss += loss"
SOMETIMES = ("            if epoch >= warmup:\n                loss.backward()\n                optimizer.step()\n"
             "            avg_loss += loss")
BEFORE = "            avg_loss += loss\n            loss.backward()\n            optimizer.step()"
BEFORE_SOMETIMES = ("            avg_loss += loss\n            if epoch >= warmup:\n                loss.backward()\n"
                    "                optimizer.step()")
BEFORE_REBOUND = ("            avg_loss += loss\n            loss = model(x).sum()\n            loss.backward()\n"
                  "            optimizer.step()")
REBOUND = ("            loss.backward()\n            optimizer.step()\n            loss = model(x).sum()\n"
           "            avg_loss += loss")


def _messages(body: str) -> list[str]:
    source = LOOP.format(body=body)
    return [f.to_json()["message"] for f in lint_source(source, "train.py", STRICT).findings if f.code == "TRN101"]


def test_a_loss_whose_backward_runs_in_the_same_iteration_is_reported_as_kept_nodes():
    for body in (SPENT, SPENT_SCALED, BEFORE):
        (message,) = _messages(body)
        assert "its backward frees the saved activations" in message and "graph nodes stay chained" in message
        assert "activations included" not in message and "CUDA OOM" not in message


def test_a_stored_loss_is_quoted_as_written():
    """The message quotes the call as the file has it, subscript included, not a shortened name."""
    source = LOOP.format(body="            loss.backward()\n            optimizer.step()\n"
                              "            history[\"loss\"].append(loss)")
    source = source.replace("        avg_loss = 0.0\n", "        avg_loss = 0.0\n        history = {\"loss\": []}\n")
    source = source.replace("print(avg_loss / len(loader))", "print(history)")
    (message,) = [f.to_json()["message"] for f in lint_source(source, "train.py", STRICT).findings
                  if f.code == "TRN101"]
    assert message.startswith('`history["loss"].append(loss)` stores the loss with its autograd graph')


def test_a_graph_that_may_still_hold_activations_keeps_the_activations_claim():
    for body in (RETAINED, SOMETIMES, REBOUND, BEFORE_SOMETIMES, BEFORE_REBOUND):
        (message,) = _messages(body)
        assert "activations included" in message and "backward frees" not in message


def _train(retain: bool, steps: int = 3, sum_first: bool = False):
    torch.manual_seed(0)
    layer = torch.nn.Linear(16, 16)
    total, activations = 0.0, []
    for _ in range(steps):
        hidden = torch.tanh(layer(torch.randn(8, 16)))  # tanh saves its output for backward
        activations.append(weakref.ref(hidden))
        loss = hidden.pow(2).mean()
        del hidden
        if sum_first:
            total += loss
        loss.backward(retain_graph=retain)
        if not sum_first:
            total += loss
    gc.collect()
    return total, activations


def _chain_length(total) -> int:
    length, node = 0, total.grad_fn
    while node is not None and node.name() == "AddBackward0":
        length += 1
        node = next((n for n, _ in node.next_functions if n is not None and n.name() == "AddBackward0"), None)
    return length


def test_torch_backward_frees_the_activations_but_the_sum_keeps_the_nodes():
    for sum_first in (False, True):
        total, activations = _train(retain=False, steps=5, sum_first=sum_first)
        assert all(ref() is None for ref in activations)  # saved activations freed by backward
        assert total.requires_grad and _chain_length(total) >= 4  # the nodes stay chained to the sum
    kept, activations = _train(retain=True)
    assert all(ref() is not None for ref in activations)  # retain_graph keeps them
