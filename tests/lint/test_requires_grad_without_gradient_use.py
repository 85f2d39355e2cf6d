"""TRN102: an input created with `requires_grad=True` in an evaluation loop does not make the loop one
that wants gradients; reading one does (re-created dev r070, jhjacobsen/invertible-resnet#15: the
test loop wraps its inputs in `Variable(inputs, requires_grad=True)`, never reads a gradient, and
keeps every batch's graph). Before, the word `requires_grad` anywhere in the function kept the rule
quiet. A saliency loop that reads `inputs.grad` stays quiet; the fixed code runs and records no graph."""

from __future__ import annotations

import textwrap

import torch
import torch.nn as nn
from project_helpers import run_check

PROGRAM = '''\
    import torch
    import torch.nn as nn

    criterion = nn.CrossEntropyLoss()


    def test(model, loader):
        model.eval()
        total = 0.0
        outputs = []
        for inputs, targets in loader:
            inputs = inputs.clone().requires_grad_(True)
            out = model(inputs)
            total += criterion(out, targets).item()
            outputs.append(out)
        return total, outputs
'''

SALIENCY = PROGRAM.replace("            outputs.append(out)\n",
                           "            out.sum().backward()\n            outputs.append(inputs.grad.abs())\n")


def _loader():
    return [(torch.randn(3, 4), torch.tensor([0, 1, 2])) for _ in range(2)]


def test_requires_grad_input_without_gradient_use_is_reported_and_fixed(tmp_path):
    path = tmp_path / "evaluate.py"
    path.write_text(textwrap.dedent(PROGRAM))
    findings = run_check(path, "TRN102")
    assert [f["line"] for f in findings] == [13]  # `out = model(inputs)`
    run_check(path, "TRN102", "--fix")
    fixed = path.read_text()
    assert "torch.no_grad()" in fixed
    namespace: dict = {}
    exec(compile(fixed, str(path), "exec"), namespace)
    model = nn.Linear(4, 3)
    _, outputs = namespace["test"](model, _loader())
    assert all(out.grad_fn is None for out in outputs)  # the fixed loop records no graph
    namespace = {}
    exec(compile(textwrap.dedent(PROGRAM), "before.py", "exec"), namespace)
    _, outputs = namespace["test"](model, _loader())
    assert all(out.grad_fn is not None for out in outputs)  # the reported loop kept every batch's graph


def test_a_loop_that_reads_the_input_gradient_is_quiet(tmp_path):
    path = tmp_path / "saliency.py"
    path.write_text(textwrap.dedent(SALIENCY))
    assert run_check(path, "TRN102") == []
    namespace: dict = {}
    exec(compile(textwrap.dedent(SALIENCY), "saliency.py", "exec"), namespace)
    _, maps = namespace["test"](nn.Linear(4, 3), _loader())
    assert all(m.shape == (3, 4) for m in maps)  # the gradient is read: no_grad would break it
