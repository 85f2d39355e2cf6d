"""TRN406 on divisions written as calls (`a.div(b)`, `torch.div(a, b)`), on the spread item of
`torch.std_mean`, and on the spread of a window of values an object records one per call
(analysis/recorded.py). Each program failed before (no finding); the quiet twins stay quiet; the
claims are checked against torch and the fixes run."""

from __future__ import annotations

import subprocess
import sys

import torch

from traindoctor.config import Config
from traindoctor.lint import fix_source, lint_source

CONFIG = Config(select=("strict",))


def _lines(source: str, code: str = "TRN406") -> list[int]:
    return [f.range.start.line + 1 for f in lint_source(source, "t.py", CONFIG).findings if f.code == code]


def _fixed(source: str) -> str:
    return fix_source(source, "t.py", CONFIG, unsafe=True)[0]


def _pyflakes_clean(source: str, tmp_path) -> None:
    path = tmp_path / "fixed.py"
    path.write_text(source)
    proc = subprocess.run([sys.executable, "-m", "pyflakes", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# An optimizer wrapper that skips a step whose loss is an outlier of the recent losses (z-score).
SKIP_STEP = '''import torch


class SkipStep:
    def __init__(self, window=8, sigma=6.0):
        self.window = window
        self.sigma = sigma
        self._losses = []

    def record(self, loss):
        self._losses.append(loss.detach())
        while len(self._losses) > self.window + 1:
            self._losses.pop(0)

    def step_factor(self):
        if len(self._losses) < 3:
            return torch.tensor(1.0)
        loss_std, loss_mean = torch.std_mean(torch.stack(self._losses[:-1]))
        z = (self._losses[-1] - loss_mean).abs().div(loss_std)
        return (z <= self.sigma).float()


def train(steps=6, lr=0.1):
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    skip = SkipStep()
    factors = []
    for _ in range(steps):
        loss = model(torch.ones(2, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        skip.record(loss)
        factor = skip.step_factor()
        factors.append(float(factor))
        for p in model.parameters():
            p.grad.mul_(factor)
        opt.step()
    return factors
'''


def test_std_of_recorded_values_divided_by_a_div_call(tmp_path):
    assert _lines(SKIP_STEP) == [19]
    # the claim: a plateaued loss (lr 0: every recorded loss equal) makes the std 0 and the z-score NaN,
    # so every step from the third on is skipped though none is an outlier
    namespace: dict = {}
    exec(compile(SKIP_STEP, "t.py", "exec"), namespace)
    assert namespace["train"](lr=0.0) == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    std, _ = torch.std_mean(torch.stack([torch.tensor(2.0)] * 3))
    assert std.item() == 0.0 and torch.isnan(torch.tensor(0.0).div(std))
    fixed = _fixed(SKIP_STEP)
    assert ".div(loss_std + 1e-8)" in fixed and not _lines(fixed)
    _pyflakes_clean(fixed, tmp_path)
    fixed_namespace: dict = {}
    exec(compile(fixed, "t.py", "exec"), fixed_namespace)
    assert fixed_namespace["train"](lr=0.0) == [1.0] * 6  # equal losses are no outlier now


def test_recorded_window_twins_stay_quiet():
    guarded = SKIP_STEP.replace(".div(loss_std)", ".div(loss_std.clamp_min(1e-8))")
    assert _lines(guarded) == []
    # the list is the function's own (not recorded across calls), and no loop recomputes the std
    local = SKIP_STEP.replace("torch.stack(self._losses[:-1])", "torch.stack([torch.randn(()) for _ in range(4)])")
    assert _lines(local) == []
    # a list attribute that nothing appends to is not a record of calls
    unrecorded = SKIP_STEP.replace("self._losses.append(loss.detach())", "self._losses = [loss.detach()] * 3")
    assert _lines(unrecorded) == []


# Advantages normalised per minibatch with the method form of division.
PER_MINIBATCH = '''import torch


def update(policy, opt, obs, actions, advantages, epochs=2, minibatch=4):
    n = obs.shape[0]
    for _ in range(epochs):
        for start in range(0, n, minibatch):
            idx = torch.arange(start, min(start + minibatch, n))
            adv = advantages[idx]
            adv = (adv - adv.mean()).div(adv.std())
            logp = torch.log_softmax(policy(obs[idx]), -1).gather(1, actions[idx, None]).squeeze(1)
            loss = -(logp * adv).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return loss


def run(advantages):
    torch.manual_seed(0)
    policy = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(policy.parameters(), lr=0.1)
    obs, actions = torch.randn(8, 3), torch.randint(0, 2, (8,))
    update(policy, opt, obs, actions, advantages)
    return torch.cat([p.detach().flatten() for p in policy.parameters()])
'''


def test_method_form_division_by_a_minibatch_std(tmp_path):
    assert _lines(PER_MINIBATCH) == [10]
    namespace: dict = {}
    exec(compile(PER_MINIBATCH, "t.py", "exec"), namespace)
    sparse = torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])  # a sparse reward: one constant minibatch
    assert torch.isnan(namespace["run"](sparse)).any()  # the weights are NaN after the update
    fixed = _fixed(PER_MINIBATCH)
    assert ".div(adv.std() + 1e-8)" in fixed and not _lines(fixed)
    _pyflakes_clean(fixed, tmp_path)
    fixed_namespace: dict = {}
    exec(compile(fixed, "t.py", "exec"), fixed_namespace)
    assert torch.isfinite(fixed_namespace["run"](sparse)).all()
    varied = torch.linspace(-1, 1, 8)  # where no minibatch is constant the fix changes nothing that matters
    assert torch.allclose(namespace["run"](varied), fixed_namespace["run"](varied), atol=1e-5)


def test_function_form_division_and_quiet_twins():
    function_form = PER_MINIBATCH.replace("(adv - adv.mean()).div(adv.std())", "torch.div(adv - adv.mean(), adv.std())")
    assert _lines(function_form) == [10]
    assert _lines(PER_MINIBATCH.replace(".div(adv.std())", ".div(adv.std() + 1e-8)")) == []
    assert _lines(PER_MINIBATCH.replace(".div(adv.std())", ".div(2.0)")) == []
    # NumPy's divide has no gradient to turn NaN; a non-tensor's `div` method is not a division we know
    numpy_form = "import numpy as np\n\ndef f(a, b):\n    for x in a:\n        x = np.divide(x, b.std())\n    return x\n"
    assert _lines(numpy_form) == []


def test_rounding_mode_does_not_guard_a_zero_divisor():
    # why a rounding_mode does not make `torch.div` safe (rules/vocab/torch.yaml division_functions)
    zero = torch.tensor(0.0)
    assert torch.isinf(torch.div(torch.tensor(1.0), zero, rounding_mode="floor"))
    assert torch.isnan(torch.div(zero, zero, rounding_mode="trunc"))


def test_reciprocal_forms_are_divisions(tmp_path):
    method = PER_MINIBATCH.replace("(adv - adv.mean()).div(adv.std())", "(adv - adv.mean()) * adv.std().reciprocal()")
    function = PER_MINIBATCH.replace("(adv - adv.mean()).div(adv.std())",
                                     "(adv - adv.mean()) * torch.reciprocal(adv.std())")
    assert _lines(method) == [10] and _lines(function) == [10]
    assert torch.isinf(torch.tensor(0.0).reciprocal())
    for source, fixed_text in ((method, "(adv.std() + 1e-8).reciprocal()"),
                               (function, "torch.reciprocal(adv.std() + 1e-8)")):
        fixed = _fixed(source)
        assert fixed_text in fixed and not _lines(fixed)
        _pyflakes_clean(fixed, tmp_path)
    assert _lines(PER_MINIBATCH.replace("(adv - adv.mean()).div(adv.std())",
                                        "(adv - adv.mean()) * (adv.std() + 1e-8).reciprocal()")) == []


# A softmax computed in place through `out=`: `torch.exp(x, out=y)` rebinds y to an exponential, whose
# row sum (after subtracting the row's max) is at least 1. Reading y as the function's input data (its
# binding before the call) made the call form of the division a false TRN406 (collect.py binds `out=`).
PARALLEL_SOFTMAX = '''import torch


class SoftmaxCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target):
        logits_max = torch.max(logits, dim=-1)[0]
        logits.sub_(logits_max.unsqueeze(dim=-1))
        predicted = logits.gather(-1, target.unsqueeze(-1)).squeeze(-1)
        exp_logits = logits
        torch.exp(logits, out=exp_logits)
        sum_exp_logits = exp_logits.sum(dim=-1)
        loss = torch.log(sum_exp_logits) - predicted
        exp_logits.div_(sum_exp_logits.unsqueeze(dim=-1))
        ctx.save_for_backward(exp_logits, target)
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        softmax, target = ctx.saved_tensors
        grad = softmax.clone()
        grad.scatter_add_(-1, target.unsqueeze(-1), -torch.ones_like(grad[..., :1]))
        return grad * grad_output.unsqueeze(-1), None
'''


def test_out_keyword_rebinds_its_tensor():
    assert _lines(PARALLEL_SOFTMAX) == []
    assert _lines(PARALLEL_SOFTMAX.replace("exp_logits.div_(sum_exp_logits.unsqueeze(dim=-1))",
                                           "exp_logits = exp_logits / sum_exp_logits.unsqueeze(dim=-1)")) == []
    namespace: dict = {}
    exec(compile(PARALLEL_SOFTMAX, "t.py", "exec"), namespace)
    x = torch.randn(3, 5, requires_grad=True) * 50
    t = torch.tensor([0, 2, 4])
    loss = namespace["SoftmaxCrossEntropy"].apply(x.detach().clone().requires_grad_(), t)
    assert torch.allclose(loss, torch.nn.functional.cross_entropy(x.detach(), t, reduction="none"), atol=1e-4)
    shifted = x.detach() - x.detach().max(-1, keepdim=True).values
    assert (shifted.exp().sum(-1) >= 1).all()  # the max's exp(0) = 1 is in every row's sum
