"""TRN102 false finding of the first lint of GMvandeVen/continual-learning (h/prec6, bench/ecosystem):
FROMP's memorable-points loop puts the model in eval mode and runs it outside no_grad, but hands the
output's graph to a method of the class (`self.cac_grad(loss, ...)`) that calls
`torch.autograd.grad`. The graph is used; no_grad would make that call raise. A look-alike whose
helper only reads the output detached is still found."""

from __future__ import annotations

import textwrap

import pytest
import torch
import torch.nn as nn
from project_helpers import run_check


PROGRAM = '''\
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            return self.fc(x)


    class Fromp:
        def __init__(self, model):
            self.model = model
            self.kernels = []

        def cac_grad(self, loss, inputs, retain_graph=None):
            return torch.autograd.grad(loss, inputs, retain_graph=retain_graph)

        def memorable(self, points):
            self.model.eval()
            for x in points:
                logits = self.model.forward(x)
                preds = torch.softmax(logits, dim=-1)
                for c in range(preds.shape[-1]):
                    g = self.cac_grad(preds[:, c].sum(), list(self.model.parameters()), retain_graph=True)
                    self.kernels.append([t.detach() for t in g])

        def plain(self, points):
            self.model.eval()
            for x in points:
                logits = self.model.forward(x)
                self.kernels.append(self.norm(logits))

        def norm(self, t):
            return t.detach().norm()
'''


def test_a_loop_whose_helper_differentiates_the_output_is_quiet(tmp_path):
    path = tmp_path / "fromp.py"
    path.write_text(textwrap.dedent(PROGRAM))
    assert [f["line"] for f in run_check(path, "TRN102")] == [34]  # plain(): its helper only reads it detached


def test_no_grad_would_break_the_helper():
    model = nn.Linear(4, 3)
    model.eval()
    with torch.no_grad():
        preds = torch.softmax(model(torch.randn(2, 4)), dim=-1)
    with pytest.raises(RuntimeError):
        torch.autograd.grad(preds[:, 0].sum(), list(model.parameters()))
