"""TRN102: a predictor class whose `__init__` loads trained weights into the module its caller passes
(`self.net = net; self.net.load_state_dict(torch.load(ckpt))`) evaluates it in every method, in a file
that trains nothing. A loop that keeps the outputs keeps every batch's graph. Checked on torch: the kept
outputs carry a graph, and the fix (`@torch.no_grad()` on the method) runs and keeps none.

Quiet where the class also puts the module back in train mode, where the file trains, and where the
weights are loaded only by another method."""

from __future__ import annotations

import textwrap

import torch
import torch.nn as nn

from traindoctor.config import Config
from traindoctor.lint import lint_source
from traindoctor.lint.api import apply_fixes

PREDICTOR = '''\
import torch
import torch.nn as nn


class Predictor:
    def __init__(self, net: nn.Module, ckpt):
        self.net = net
        self.net.load_state_dict(torch.load(ckpt))
        self.net.eval()

    def predict(self, loader):
        preds = []
        for x in loader:
            preds.append(self.net(x))
        return preds
'''


def _lint(source: str):
    result = lint_source(textwrap.dedent(source), "predict.py", Config(select=("TRN102",)))
    assert result.error is None, result.error
    return result


def _hits(source: str) -> list[int]:
    return [f.range.start.line + 1 for f in _lint(source).findings if f.code == "TRN102"]


def _predict(source: str, tmp_path) -> list[torch.Tensor]:
    net = nn.Linear(4, 2)
    ckpt = tmp_path / "net.pt"
    torch.save(net.state_dict(), ckpt)
    namespace: dict = {}
    exec(compile(source, "predict.py", "exec"), namespace)
    return namespace["Predictor"](nn.Linear(4, 2), ckpt).predict([torch.randn(3, 4) for _ in range(2)])


def test_the_loaded_module_is_evaluated_with_autograd_on(tmp_path) -> None:
    assert _hits(PREDICTOR) == [14]
    assert all(out.grad_fn is not None for out in _predict(PREDICTOR, tmp_path))  # each keeps its graph


def test_the_fix_runs_and_keeps_no_graph(tmp_path) -> None:
    result = _lint(PREDICTOR)
    fixed = apply_fixes(PREDICTOR, [f for f in result.findings if f.fix is not None])
    assert fixed != PREDICTOR and _hits(fixed) == []
    assert all(out.grad_fn is None for out in _predict(fixed, tmp_path))


def test_quiet_when_the_class_trains_it_again() -> None:
    source = PREDICTOR + '''
    def finetune(self):
        self.net.train()
'''
    assert _hits(source) == []


def test_quiet_when_the_file_trains() -> None:
    source = PREDICTOR + '''

def tune(predictor, x, y):
    opt = torch.optim.SGD(predictor.net.parameters(), lr=0.1)
    torch.nn.functional.mse_loss(predictor.net(x), y).backward()
    opt.step()
'''
    assert _hits(source) == []


def test_quiet_when_only_another_method_loads_the_weights() -> None:
    source = PREDICTOR.replace("        self.net.load_state_dict(torch.load(ckpt))\n", "") + '''
    def restore(self, ckpt):
        self.net.load_state_dict(torch.load(ckpt))
'''
    assert _hits(source) == []
