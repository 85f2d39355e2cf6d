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


# The input is marked and handed, with the outputs, to a criterion the file cannot read (held in a
# dict): it calls autograd.grad on that input (Sobolev distillation, AberHu/Knowledge-Distillation-Zoo,
# whose test loop was reported before). Handed to a function of this file that reads no gradient, the
# loop is still reported.
HANDED_OUT = '''\
    import torch


    def test(model, loader, criterions):
        criterion = criterions["kd"]
        model.eval()
        losses = []
        for inputs, targets in loader:
            inputs.requires_grad = True
            out = model(inputs)
            losses.append(criterion(out, inputs, targets).item())
        return losses
'''

LOCAL_HELPER = HANDED_OUT.replace('    def test(model, loader, criterions):\n        criterion = criterions["kd"]\n',
                                  '    def criterion(out, inputs, targets):\n'
                                  '        return (out.sum(1) - targets).pow(2).mean() + inputs.abs().mean()\n\n\n'
                                  '    def test(model, loader, criterions):\n')


def _sobolev(out, inputs, targets):
    grad, = torch.autograd.grad(out.sum(), inputs, create_graph=True)
    return grad.pow(2).mean()


def test_a_marked_input_handed_to_a_call_the_file_cannot_read_is_quiet(tmp_path):
    path = tmp_path / "distill.py"
    path.write_text(textwrap.dedent(HANDED_OUT))
    assert run_check(path, "TRN102") == []
    namespace: dict = {}
    exec(compile(textwrap.dedent(HANDED_OUT), "distill.py", "exec"), namespace)
    losses = namespace["test"](nn.Linear(4, 3), _loader(), {"kd": _sobolev})
    assert len(losses) == 2  # the criterion reads the input's gradient
    with torch.no_grad():  # what the fix would do: autograd.grad has no graph to read
        try:
            namespace["test"](nn.Linear(4, 3), _loader(), {"kd": _sobolev})
        except RuntimeError as error:
            assert "does not require grad" in str(error)
        else:
            raise AssertionError("the criterion ran without the input's gradient")


def test_a_marked_input_handed_to_a_function_of_the_file_that_reads_no_gradient_is_reported(tmp_path):
    path = tmp_path / "evaluate.py"
    path.write_text(textwrap.dedent(LOCAL_HELPER))
    assert [f["line"] for f in run_check(path, "TRN102")] == [13]  # `out = model(inputs)`
