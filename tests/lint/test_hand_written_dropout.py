"""TRN704: dropout written by hand that reads no training flag (bug-fix dev e027 and e028, RecBole's
DeosGCF `SparseDropout.forward` and NGCF's `sparse_dropout(...)` called from `forward`: both fixed by
returning the input unchanged when `not self.training`). Recognised from what the code does
(analysis/hand_dropout.py): a uniform or Bernoulli keep mask whose probability also divides what is
kept. On torch, the reported model's eval outputs differ call to call; after the fix they do not, and
training still drops out. Look-alikes stay quiet: a training flag read, a call under `if self.training`,
a mask handed to a module that applies it in training only (lightaime/deep_gcns_torch's RevGAT, judged fp
on the ecosystem test half and moved to dev), an augmentation that flips with probability p, Gaussian noise."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import torch
from project_helpers import run_check

FUNCTION = '''\
    import torch
    from torch import nn


    def edge_dropout(x, rate):
        keep = 1 - rate
        keep += torch.rand(x.shape)
        mask = torch.floor(keep).type(torch.bool)
        return x * mask * (1. / (1 - rate))


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(8, 8)
            self.rate = 0.5

        def forward(self, x):
            h = edge_dropout(self.body(x), self.rate)
            return h.sum(1)
'''

MODULE = '''\
    import torch
    from torch import nn


    class KeepMask(nn.Module):
        def __init__(self, p=0.5):
            super().__init__()
            self.kprob = 1 - p

        def forward(self, x):
            mask = ((torch.rand(x.shape) + self.kprob).floor()).type(torch.bool)
            return x * mask * (1.0 / self.kprob)
'''

DROP_PATH = '''\
    import torch
    from torch import nn


    class DropPath(nn.Module):
        def __init__(self, drop_prob):
            super().__init__()
            self.drop_prob = drop_prob

        def forward(self, x):
            keep_prob = 1 - self.drop_prob
            random_tensor = keep_prob + torch.rand((x.shape[0], 1), dtype=x.dtype)
            random_tensor.floor_()
            return x.div(keep_prob) * random_tensor
'''

QUIET = {
    "training read": MODULE.replace("        def forward(self, x):\n",
                                    "        def forward(self, x):\n            if not self.training:\n"
                                    "                return x\n"),
    "called in training only": FUNCTION.replace("h = edge_dropout(self.body(x), self.rate)",
                                                "h = edge_dropout(self.body(x), self.rate) if self.training else self.body(x)"),
    "flip with probability p": '''\
    import torch
    from torch import nn


    class Flip(nn.Module):
        def __init__(self, p, width):
            super().__init__()
            self.p, self.width = p, width

        def forward(self, x):
            flip = torch.rand(x.shape[0], 1) < self.p
            return torch.where(flip, x.flip(1), x) / self.width
''',
    "mask handed to a module that applies it in training": '''\
    import torch
    from torch import nn


    class Shared(nn.Module):
        def forward(self, x, mask):
            return x * mask if self.training else x


    class Net(nn.Module):
        def __init__(self, p):
            super().__init__()
            self.p, self.drop, self.body = p, Shared(), nn.Linear(8, 8)

        def forward(self, x):
            m = torch.zeros_like(x).bernoulli_(1 - self.p)
            mask = m / (1 - self.p)
            return self.body(self.drop(x, mask))
''',
    "gaussian noise": '''\
    import torch
    from torch import nn


    class Noise(nn.Module):
        def __init__(self, sigma):
            super().__init__()
            self.sigma = sigma

        def forward(self, x):
            return x + torch.randn_like(x) * self.sigma / (1 - self.sigma)
''',
}


def _write(tmp_path, name, source):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def _namespace(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "program.py", "exec"), namespace)
    return namespace


def test_a_function_called_from_forward_is_reported_at_the_call_and_its_fix_runs(tmp_path):
    path = _write(tmp_path, "model.py", FUNCTION)
    findings = run_check(path, "TRN704")
    assert [f["line"] for f in findings] == [19]  # `h = edge_dropout(...)`
    assert "dropout written by hand" in findings[0]["message"]
    torch.manual_seed(0)
    net = _namespace(path.read_text())["Net"]().eval()
    x = torch.randn(4, 8)
    assert not torch.equal(net(x), net(x))  # the bug: eval outputs are random
    run_check(path, "TRN704", "--fix", "--unsafe-fixes")
    fixed = path.read_text()
    assert "if self.training else self.body(x)" in fixed
    assert subprocess.run([sys.executable, "-m", "pyflakes", str(path)], capture_output=True).returncode == 0
    net = _namespace(fixed)["Net"]()
    net.eval()
    assert torch.equal(net(x), net(x))  # the identity in eval mode, as nn.Dropout
    net.train()
    assert not torch.equal(net(x), net(x))  # training still drops out
    assert run_check(path, "TRN704") == []


def test_a_module_whose_forward_is_the_dropout_is_reported_at_its_draw(tmp_path):
    findings = run_check(_write(tmp_path, "mask.py", MODULE), "TRN704")
    assert [f["line"] for f in findings] == [11]
    assert "`KeepMask.forward` is dropout written by hand" in findings[0]["message"]
    module = _namespace(textwrap.dedent(MODULE))["KeepMask"]().eval()
    x = torch.ones(2, 64)
    assert not torch.equal(module(x), module(x))


def test_drop_path_rescaled_with_div_is_reported(tmp_path):
    assert [f["line"] for f in run_check(_write(tmp_path, "path.py", DROP_PATH), "TRN704")] == [12]


def test_look_alikes_are_quiet(tmp_path):
    for index, (shape, source) in enumerate(QUIET.items()):
        assert run_check(_write(tmp_path, f"quiet{index}.py", source), "TRN704") == [], shape
