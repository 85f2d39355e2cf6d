"""TRN401 on `atanh`: a float32 tanh saturates to exactly +-1 once its input is above about 9.1 in size (the
same fact as `1 - tanh(x)**2`), and atanh is +-inf there with an inf gradient (NaN through the tanh). The
inverse of a tanh-squashed action computed from the squashed value (`atanh(tanh(u))`, through a policy whose
forward ends in tanh) is the shape; a clamp to [-1, 1] allows the bounds too. Each claim is checked on torch,
and the fix is run."""

from __future__ import annotations

import subprocess
import sys

import torch

from traindoctor.config import Config
from traindoctor.lint import lint_source
from traindoctor.lint.api import fix_source

CONFIG = Config()

POLICY = '''import torch
from torch import nn


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 2)

    def forward(self, obs):
        return torch.tanh(self.net(obs))


def pre_squash_loss(actor, obs, target):
    action = actor(obs)
    pre = torch.atanh(action)
    return (pre - target).pow(2).mean()


def train(obs, target):
    actor = Actor()
    optimizer = torch.optim.Adam(actor.parameters())
    loss = pre_squash_loss(actor, obs, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
'''
ATANH = "pre = torch.atanh(action)"


def _lines(source: str) -> list[int]:
    return [f.range.start.line + 1 for f in lint_source(source, "t.py", CONFIG).findings if f.code == "TRN401"]


def _run(source: str, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    namespace: dict = {}
    exec(compile(source, "t.py", "exec"), namespace)
    torch.manual_seed(0)
    actor = namespace["Actor"]()
    with torch.no_grad():
        actor.net.weight.fill_(scale)  # a large pre-activation saturates the tanh
    loss = namespace["pre_squash_loss"](actor, torch.ones(3, 4), torch.zeros(3, 2))
    loss.backward()
    return loss.detach(), actor.net.weight.grad


def test_atanh_of_a_tanh_output_is_reported_and_inf_on_torch(tmp_path):
    assert _lines(POLICY) == [16]
    message = next(f.message for f in lint_source(POLICY, "t.py", CONFIG).findings if f.code == "TRN401")
    assert "tanh output" in message and "9.1" in message
    assert torch.tanh(torch.tensor(9.1)).item() == 1.0  # the saturation the message states
    loss, grad = _run(POLICY, 3.0)  # pre-activation 12: tanh is exactly 1
    assert torch.isinf(loss) and torch.isnan(grad).all()
    fixed = fix_source(POLICY, "t.py", CONFIG, unsafe=True)[0]
    assert "action.clamp(-1 + torch.finfo(action.dtype).eps, 1 - torch.finfo(action.dtype).eps)" in fixed
    assert _lines(fixed) == []
    path = tmp_path / "fixed.py"
    path.write_text(fixed)
    proc = subprocess.run([sys.executable, "-m", "pyflakes", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    loss, grad = _run(fixed, 3.0)
    assert torch.isfinite(loss) and torch.isfinite(grad).all()
    # unsaturated, the fix changes nothing
    assert torch.allclose(_run(POLICY, 0.1)[0], _run(fixed, 0.1)[0])


def test_atanh_of_a_clamp_to_the_unit_bounds_is_reported():
    source = POLICY.replace(ATANH, "pre = torch.atanh(torch.clamp(action, -1, 1))")
    assert _lines(source) == [16]
    assert torch.isinf(torch.atanh(torch.clamp(torch.tensor([1.5]), -1, 1))).all()
    method = POLICY.replace(ATANH, "pre = action.clamp(-1.0, 1.0).atanh()")
    assert _lines(method) == [16]


def test_quiet_twins():
    inside = POLICY.replace(ATANH, "pre = torch.atanh(action.clamp(-0.999999, 0.999999))")
    assert _lines(inside) == []
    assert torch.isfinite(_run(inside, 3.0)[0])
    # a value with no evidence of reaching +-1 (data the function is given) is not reported
    data = POLICY.replace("    action = actor(obs)\n", "    action = obs[:, :2]\n")
    assert _lines(data) == []
    # NumPy's arctanh carries no gradient
    numpy = POLICY.replace("import torch\n", "import numpy as np\nimport torch\n", 1) \
        .replace(ATANH, "pre = torch.as_tensor(np.arctanh(action.detach().numpy()))")
    assert _lines(numpy) == []
    # under no_grad nothing flows back
    no_grad = POLICY.replace(f"    {ATANH}\n", f"    with torch.no_grad():\n        {ATANH}\n")
    assert _lines(no_grad) == []


def test_callers_passing_models_of_two_classes_are_not_read_as_the_first_ones():
    # both are "model" objects; only Actor ends in a tanh. Before, the kind alone was compared, so the
    # Critic passed by the second caller was read as the Actor the first one passes.
    critic = '''

class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 2)

    def forward(self, obs):
        return self.net(obs)


def evaluate(obs, target):
    return pre_squash_loss(Critic(), obs, target)
'''
    assert _lines(POLICY + critic) == []
    same_class = critic.replace("pre_squash_loss(Critic()", "pre_squash_loss(Actor()")
    assert _lines(POLICY + same_class) == [16]
