"""analysis/sampling.py: the probability a policy gives to an action it drew itself is not
exactly 0, so TRN402 does not report `log(pi.gather(1, a))` when the program draws `a`
from the same function's output (`Categorical(prob).sample()`). Calls are resolved by
their receiver (self, an instance of an in-file class), never by the method's name. The
claim is checked against torch on a distribution with an exact 0 in it."""

from __future__ import annotations

import textwrap

import pytest
import torch
from torch.distributions import Categorical

from traindoctor.config import Config
from traindoctor.lint import lint_source

CONFIG = Config(select=("TRN402",))

PROGRAM = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical
class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
    def pi(self, x, dim=0):
        return F.softmax(self.fc(x), dim=dim)
    def other(self, x, dim=0):
        return F.softmax(self.fc(x) * 2, dim=dim)
    def update(self, s, a, labels, adv):
        pi = self.pi(s, dim=1)
        {loss}
        loss.mean().backward()
def act(s):
    policy = Policy()
    prob = policy.pi(s)
    prob = prob.view(-1)
    {draw}
"""


def _hits(source: str) -> list[int]:
    result = lint_source(textwrap.dedent(source), "example.py", CONFIG)
    assert result.error is None, result.error
    return [f.range.start.line + 1 for f in result.findings if f.code == "TRN402"]


@pytest.mark.parametrize("loss, draw, quiet", [
    ("loss = -torch.log(pi.gather(1, a)) * adv", "return Categorical(prob).sample()", True),
    ("pi_a = pi.squeeze(1).gather(1, a)\n        loss = -torch.log(pi_a) * adv",
     "m = Categorical(prob)\n    return m.sample().item()", True),
    ("loss = -torch.log(pi[torch.arange(len(a)), a]) * adv", "return torch.multinomial(prob, 1)", True),
    # the whole distribution: entries never drawn can be exactly 0
    ("loss = -(pi * torch.log(pi)).sum(1)", "return Categorical(prob).sample()", False),
    # a distribution built but never sampled from (an entropy bonus, say)
    ("loss = -torch.log(pi.gather(1, a)) * adv", "return Categorical(prob).entropy()", False),
    # the program draws from another method's output
    ("pi = self.other(s, dim=1)\n        loss = -torch.log(pi.gather(1, a)) * adv",
     "return Categorical(prob).sample()", False),
])
def test_the_probability_of_an_index_drawn_from_the_same_function_is_not_reported(loss, draw, quiet):
    hits = _hits(PROGRAM.format(loss=loss, draw=draw))
    assert (hits == []) is quiet, hits


def test_a_receiver_that_is_not_an_instance_of_the_class_resolves_to_nothing():
    source = PROGRAM.format(loss="loss = -torch.log(pi.gather(1, a)) * adv", draw="return Categorical(prob).sample()")
    source = source.replace("policy = Policy()", "policy = load_policy()")  # what it is, we cannot know
    assert _hits(source) != []


def test_torch_agrees_a_draw_never_picks_an_index_of_probability_zero():
    logits = torch.tensor([[0.0, -200.0, -1.0]], requires_grad=True)
    prob = torch.softmax(logits, dim=1)
    assert prob[0, 1].item() == 0.0  # underflowed: log of it is -inf
    torch.manual_seed(0)
    actions = Categorical(prob).sample((2000,)).view(-1, 1)
    assert 1 not in actions.tolist()
    picked = torch.log(prob.expand(len(actions), -1).gather(1, actions))
    picked.sum().backward()
    assert torch.isfinite(picked).all() and torch.isfinite(logits.grad).all()
    assert torch.isinf(torch.log(prob)).any()  # the whole distribution's log is not finite


def test_a_literal_row_of_the_distribution_is_not_a_drawn_index():
    source = PROGRAM.format(loss="loss = -torch.log(pi[0]).sum() * adv", draw="return Categorical(prob).sample()")
    assert _hits(source) != []


def test_an_edit_of_the_draw_in_another_block_updates_the_finding():
    """The language server re-lints only the blocks an edit touches, plus the rules whose facts
    changed: removing the draw in `act` must bring the finding back in `Policy.update`."""
    from traindoctor.lint import LintCache

    cache = LintCache()
    drawn = textwrap.dedent(PROGRAM.format(loss="loss = -torch.log(pi.gather(1, a)) * adv",
                                           draw="return Categorical(prob).sample()"))
    assert [f for f in lint_source(drawn, "example.py", CONFIG, cache).findings if f.code == "TRN402"] == []
    entropy = drawn.replace("Categorical(prob).sample()", "Categorical(prob).entropy()")
    warm = [f.range.start.line for f in lint_source(entropy, "example.py", CONFIG, cache).findings if f.code == "TRN402"]
    cold = [f.range.start.line for f in lint_source(entropy, "example.py", CONFIG).findings if f.code == "TRN402"]
    assert warm == cold != []


def test_an_edit_away_from_the_draw_call_in_its_function_updates_the_finding():
    from traindoctor.lint import LintCache

    cache = LintCache()
    drawn = textwrap.dedent(PROGRAM.format(loss="loss = -torch.log(pi.gather(1, a)) * adv",
                                           draw="m = Categorical(prob)\n    a = m.sample()\n    return a"))
    assert [f for f in lint_source(drawn, "example.py", CONFIG, cache).findings if f.code == "TRN402"] == []
    entropy = drawn.replace("a = m.sample()", "a = m.entropy()")
    warm = [f.range.start.line for f in lint_source(entropy, "example.py", CONFIG, cache).findings if f.code == "TRN402"]
    cold = [f.range.start.line for f in lint_source(entropy, "example.py", CONFIG).findings if f.code == "TRN402"]
    assert warm == cold != []
