"""TRN102's single forward after `eval()` (h/prec6, issue 27): one forward pass of a module per call
of the function, in no loop, whose output is read only detached, is not reported. Its graph is freed
when the function returns: the waste is one pass, not growth. The ecosystem's dev findings of this
shape (a sample grid after `.eval()`, a public `infer()` of one input) were all judged debatable.

Still found: a forward in a loop (a pass over many inputs) and a method of the model
other than `forward` (`decode`, `generate`, `infer`), which may run the model many times inside."""

from __future__ import annotations

import gc
import textwrap
import weakref

import pytest
import torch
import torch.nn as nn
from project_helpers import run_check


PROGRAM = """\
    import torch
    import torch.nn as nn


    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Linear(8, 2)
            self.decoder = nn.Linear(2, 8)

        def forward(self, x):
            return self.decoder(self.encoder(x))

        def decode(self, z, steps=16):
            for _ in range(steps):
                z = torch.tanh(z)
            return self.decoder(z)


    model = VAE()
    opt = torch.optim.Adam(model.parameters())


    def train(x):
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


    def shown(x):
        model.eval()
        {body}
        return out.cpu().data
"""


def _lines(tmp_path, body):
    path = tmp_path / "sample.py"
    path.write_text(textwrap.dedent(PROGRAM).format(body=body))
    return [f["line"] for f in run_check(path, "TRN102")]


@pytest.mark.parametrize("body, found", [
    ("out = model(x[:32])", []),  # one forward of the module
    ("out = model.forward(x[:32])", []),
    ("out = model.decoder(torch.randn(64, 2))", []),  # one forward of a submodule the class binds
    ("out = model.decode(torch.randn(64, 2))", [33]),  # a method: it may run the model many times
    ("for _ in range(4):\n        out = model(x)", [34]),  # a loop: a pass over many inputs
])
def test_one_forward_per_call_in_no_loop_is_quiet(body, found, tmp_path):
    assert _lines(tmp_path, body) == found


def test_the_graph_of_one_forward_is_freed_when_its_detached_result_is_returned():
    """The fact the quiet case rests on: the forward records a graph (so the claim was not wrong),
    but nothing outside the function holds it once `.data` is returned."""
    model = nn.Linear(8, 8)
    model.eval()
    kept = []

    def shown(x):
        out = model(x)
        assert out.grad_fn is not None  # eval() does not turn recording off
        kept.append(weakref.ref(out))  # the graph's root: it holds grad_fn and what it saved
        return out.cpu().data

    result = shown(torch.randn(4, 8))
    gc.collect()
    assert result.grad_fn is None and not result.requires_grad
    assert kept[0]() is None  # the graph died with the function's frame
