"""The false findings that the ecosystem test half showed at `de7d4cc` (issue 27), fixed in general
after their repositories moved to dev (bench/ecosystem/README.md, *Moves*, fifth 2026-12-05 row).
Each shape is decided by what the code does, each has a look-alike that must still be found, and
the torch fact each decision rests on is checked here against torch.

- TRN705: a plain list whose every module is also registered on `self` in the same pass
  (`self.__setattr__(f"fc{i}", fc)`, `setattr(self, ...)`, `self.add_module(...)`: vitchyr/rlkit's
  Mlp and TwoHeadMlp). The list only aliases registered modules.
- TRN402: `log` of a detached softmax (Khrylx/PyTorch-RL's `get_kl`): its value can be -inf, but no
  gradient flows through it, so none can be NaN, which is what the rule claims.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from project_helpers import lines_found_in_project


# -- TRN705: every module of the list also registered on self -------------------------------------

MLP = """
import torch.nn as nn


class Mlp(nn.Module):
    def __init__(self, sizes, layer_norm=False):
        super().__init__()
        self.fcs = []
        self.layer_norms = []
        in_size = 4
        for i, size in enumerate(sizes):
            fc = nn.Linear(in_size, size)
            in_size = size
            {register_fc}
            self.fcs.append(fc)
            if layer_norm:
                ln = nn.LayerNorm(size)
                self.__setattr__("layer_norm{{}}".format(i), ln)
                self.layer_norms.append(ln)

    def forward(self, x):
        for fc in self.fcs:
            x = fc(x).relu()
        return x
"""

REGISTERED = {
    "__setattr__": 'self.__setattr__("fc{}".format(i), fc)',
    "setattr": 'setattr(self, f"fc{i}", fc)',
    "add_module": 'self.add_module(f"fc{i}", fc)',
    "register_module": 'self.register_module(f"fc{i}", fc)',
}


@pytest.mark.parametrize("how", sorted(REGISTERED))
def test_a_list_whose_modules_are_registered_in_the_same_pass_is_not_reported(how, tmp_path):
    assert lines_found_in_project(tmp_path, {"train.py": MLP.format(register_fc=REGISTERED[how])}, "TRN705") == []


NOT_REGISTERED = {
    # the LayerNorms are registered, the Linears are not: their weights are lost
    "nothing": "pass",
    # object.__setattr__ bypasses Module.__setattr__: a plain attribute, not a submodule
    "object.__setattr__": 'object.__setattr__(self, f"fc{i}", fc)',
    # another module is registered under that name, not the one put in the list
    "another module": 'self.add_module(f"fc{i}", nn.Linear(in_size, size))',
}


@pytest.mark.parametrize("how", sorted(NOT_REGISTERED))
def test_a_list_whose_modules_are_not_all_registered_is_still_reported(how, tmp_path):
    assert lines_found_in_project(tmp_path, {"train.py": MLP.format(register_fc=NOT_REGISTERED[how])}, "TRN705") == [8]


def test_registering_in_another_pass_than_the_append_is_still_reported(tmp_path):
    source = """
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.fcs = []
            for i in range(n):
                fc = nn.Linear(4, 4)
                self.fcs.append(fc)
            for i in range(n):
                fc = nn.Linear(4, 4)
                self.add_module(f"fc{i}", fc)
    """
    assert lines_found_in_project(tmp_path, {"train.py": source}, "TRN705") == [8]


class _RegisteredMlp(nn.Module):
    """The shape above, run: what the decision rests on."""

    def __init__(self, how: str):
        super().__init__()
        self.fcs = []
        for i in range(2):
            fc = nn.Linear(4, 4)
            if how == "__setattr__":
                self.__setattr__(f"fc{i}", fc)
            elif how == "setattr":
                setattr(self, f"fc{i}", fc)
            elif how in ("add_module", "register_module"):
                getattr(self, how)(f"fc{i}", fc)
            elif how == "object.__setattr__":
                object.__setattr__(self, f"fc{i}", fc)
            self.fcs.append(fc)


@pytest.mark.parametrize("how", sorted(REGISTERED))
def test_torch_registers_the_listed_modules(how):
    model = _RegisteredMlp(how)
    params = {id(p) for p in model.parameters()}
    assert all(id(p) in params for fc in model.fcs for p in fc.parameters())
    assert set(model.state_dict()) == {"fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias"}
    model.eval()
    assert not any(fc.training for fc in model.fcs)
    model.double()
    assert all(fc.weight.dtype == torch.float64 for fc in model.fcs)  # .to() reaches the listed objects


def test_torch_object_setattr_registers_nothing():
    model = _RegisteredMlp("object.__setattr__")
    assert list(model.parameters()) == [] and model.state_dict() == {}


# -- TRN402: log of a tensor that carries no gradient ----------------------------------------------

POLICY = """
import torch
import torch.nn as nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 3)

    def forward(self, x):
        return torch.softmax(self.head(x), dim=1)

    def get_kl(self, x):
        action_prob1 = self.forward(x)
        {bind}
        kl = action_prob0 * (torch.log(action_prob0) - torch.log(action_prob1))
        return kl.sum(1, keepdim=True)
"""

NO_GRADIENT = {
    "detach": "action_prob0 = action_prob1.detach()",
    "data": "action_prob0 = action_prob1.data",
    "detach then index": "action_prob0 = action_prob1.detach()[:, :]",
    "no_grad": "with torch.no_grad():\n            action_prob0 = self.forward(x)",
}


@pytest.mark.parametrize("how", sorted(NO_GRADIENT))
def test_log_of_a_softmax_without_gradient_is_not_reported(how, tmp_path):
    # only the log of the live probabilities (line 17, column 56) is reported
    files = {"train.py": POLICY.format(bind=NO_GRADIENT[how])}
    assert lines_found_in_project(tmp_path, files, "TRN402") == [17 + (how == "no_grad")]


def test_log_of_a_detached_softmax_direct_is_not_reported(tmp_path):
    source = """
    import torch
    def entropy_bonus(logits):
        p = torch.softmax(logits, -1)
        return -(p.detach() * torch.log(p.detach())).sum()
    """
    assert lines_found_in_project(tmp_path, {"train.py": source}, "TRN402") == []


def test_a_name_bound_once_without_and_once_with_history_is_still_reported(tmp_path):
    source = POLICY.format(bind="action_prob0 = action_prob1.detach()\n"
                                "        if x.shape[0] > 1:\n"
                                "            action_prob0 = action_prob1")
    assert lines_found_in_project(tmp_path, {"train.py": source}, "TRN402") == [19, 19]


@pytest.mark.parametrize("use", [
    "loss = (action_prob1 * torch.log(action_prob0)).sum()",
    "lp0 = torch.log(action_prob0)\n        loss = (action_prob1 * lp0).sum()",
    "lp0 = torch.log(action_prob0)\n        loss = torch.mul(action_prob1, lp0).sum()",
])
def test_a_detached_log_that_multiplies_a_live_tensor_is_still_reported(use, tmp_path):
    source = POLICY.replace("kl = action_prob0 * (torch.log(action_prob0) - torch.log(action_prob1))\n"
                            "        return kl.sum(1, keepdim=True)", use + "\n        return loss")
    source = source.format(bind="action_prob0 = action_prob1.detach()")
    assert lines_found_in_project(tmp_path, {"train.py": source}, "TRN402") == [17]


def _underflowing_logits() -> torch.Tensor:
    logits = torch.tensor([[0.0, -200.0, 1.0]], requires_grad=True)
    assert torch.softmax(logits, dim=1)[0, 1] == 0  # exactly 0 in float32
    return logits


def test_torch_a_detached_log_in_a_sum_gives_no_nan_gradient():
    logits = _underflowing_logits()
    p0 = torch.softmax(logits, dim=1).detach()
    assert torch.isinf(torch.log(p0)).any()  # the value is still -inf (and 0 * -inf is NaN)...
    kl = (p0 * (torch.log(p0) - torch.log_softmax(logits, dim=1))).sum()
    assert torch.isnan(kl)
    (grad,) = torch.autograd.grad(kl, logits)
    assert torch.isfinite(grad).all()  # ...but the backward of a sum never reads it


def test_torch_a_detached_log_as_a_factor_of_a_live_tensor_gives_a_nan_gradient():
    logits = _underflowing_logits()
    p1 = torch.softmax(logits, dim=1)
    (grad,) = torch.autograd.grad((p1 * torch.log(p1.detach())).sum(), logits)
    assert torch.isnan(grad).any()  # -inf is the coefficient of p1: softmax's backward gives NaN


def test_torch_the_live_log_gives_a_nan_gradient():
    logits = _underflowing_logits()
    p1 = torch.softmax(logits, dim=1)
    (grad,) = torch.autograd.grad((p1.detach() * torch.log(p1)).sum(), logits)
    assert torch.isnan(grad).any()  # what TRN402 claims where the log's operand carries a gradient
