"""Norms and sums over the rows of data a function is given (TRN406, issue 27, helper num4).

A per-row norm or sum of a parameter that no in-file caller fills with a learned output is exactly 0
for an all-zero row (a padded position, an isolated node, an all-zero pixel); dividing by it gives
0/0. The norm of a learned output, a whole-batch reduction and every guard form stay quiet, and a
test of a tensor's shape (`adj.dim() == 2`) is no guard of its values. Each claim is run on torch."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from traindoctor.config import Config
from traindoctor.lint import fix_source, lint_source

CONFIG = Config(select=("strict",))


def _lines(source: str, code: str = "TRN406") -> list[int]:
    return sorted(f.range.start.line + 1 for f in lint_source(source, "t.py", CONFIG).findings if f.code == code)


def _run(source: str) -> dict:
    namespace: dict = {"__name__": "t"}
    exec(compile(source, "t.py", "exec"), namespace)
    return namespace


# -- the torch facts ----------------------------------------------------------------------------------

def test_an_all_zero_row_makes_a_row_norm_division_nan_forward_and_backward():
    x = torch.tensor([[0.0, 0.0], [3.0, 4.0]], requires_grad=True)
    y = x / x.norm(dim=1, keepdim=True)
    assert torch.isnan(y[0]).all() and torch.isfinite(y[1]).all()
    y.sum().backward()
    assert torch.isnan(x.grad[0]).all()
    x = torch.tensor([[0.0, 0.0], [3.0, 4.0]], requires_grad=True)
    F.normalize(x, dim=1).sum().backward()  # the library form has an eps: 0 forward, finite gradient
    assert torch.isfinite(x.grad).all()


def test_a_mean_over_an_adjacency_row_of_an_isolated_node_is_nan():
    adj = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    out = (adj @ x) / adj.sum(dim=-1, keepdim=True)
    assert torch.isnan(out[0]).all() and torch.isfinite(out[1]).all()
    out.sum().backward()
    assert torch.isnan(x.grad).any()


# -- reported ------------------------------------------------------------------------------------------

COSINE = '''import torch


def spectral_angle(preds, target):
    dot = (preds * target).sum(dim=1)
    preds_norm = preds.norm(dim=1)
    target_norm = target.norm(dim=1)
    return torch.clamp(dot / (preds_norm * target_norm), -1, 1).acos()
'''

EDGE_COSINE = '''import torch


def edge_cosine(x, edge_index, beta):
    row, col = edge_index
    norm = torch.norm(x, 2, 1)
    norm = norm[row] * norm[col]
    cos = (x[row] * x[col]).sum(-1)
    cos /= norm
    return cos * beta
'''

DENSE_MEAN = '''import torch


class DenseMean(torch.nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n_in, n_out))

    def forward(self, x, adj):
        adj = adj.unsqueeze(0) if adj.dim() == 2 else adj
        out = torch.matmul(adj, x)
        out = out / adj.sum(dim=-1, keepdim=True)
        return out @ self.weight
'''


@pytest.mark.parametrize("source, line", [(COSINE, 8), (EDGE_COSINE, 9), (DENSE_MEAN, 12)])
def test_a_row_norm_or_sum_of_the_function_input_is_reported(source, line):
    assert _lines(source) == [line]


def test_the_fix_gives_zero_rows_and_finite_gradients():
    fixed = fix_source(COSINE, "t.py", CONFIG, unsafe=True)[0]
    assert _lines(fixed) == []
    preds = torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]], requires_grad=True)
    target = torch.tensor([[1.0, 1.0, 1.0], [3.0, 2.0, 1.0]])
    before = _run(COSINE)["spectral_angle"](preds, target)
    assert torch.isnan(before[0]) and torch.isfinite(before[1])
    after = _run(fixed)["spectral_angle"](preds, target)
    assert torch.isfinite(after).all() and torch.allclose(after[1], before[1])
    after.sum().backward()
    assert torch.isfinite(preds.grad).all()
    fixed = fix_source(DENSE_MEAN, "t.py", CONFIG, unsafe=True)[0]
    assert _lines(fixed) == []
    layer = _run(fixed)["DenseMean"](2, 3)
    x = torch.randn(1, 2, 2, requires_grad=True)
    layer(x, torch.tensor([[0.0, 0.0], [1.0, 1.0]])).sum().backward()
    assert torch.isfinite(x.grad).all()


# -- quiet ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("change", [
    ("dot / (preds_norm * target_norm)", "dot / (preds_norm * target_norm + 1e-8)"),
    ("dot / (preds_norm * target_norm)", "dot / (preds_norm * target_norm).clamp_min(1e-8)"),
    ("dot / (preds_norm * target_norm)", "dot / (preds_norm * target_norm).masked_fill(preds_norm == 0, 1)"),
    ("preds.norm(dim=1)", "preds.norm()"),  # a whole-tensor norm: 0 only for an all-zero input
    ("    return", "    assert (preds_norm * target_norm > 0).all()\n    return"),  # a test of its values
])
def test_guarded_or_whole_tensor_is_quiet(change):
    assert _lines(COSINE.replace(*change)) == []


def test_a_caller_passing_a_learned_output_keeps_it_quiet():
    """Embeddings and projections: the in-file caller passes a Linear's output."""
    source = COSINE + '''

class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 3)

    def forward(self, x, y):
        return spectral_angle(self.proj(x), y)
'''
    assert _lines(source) == []


def test_a_forward_input_filled_with_a_learned_output_in_the_file_is_quiet():
    source = DENSE_MEAN + '''

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.conv = DenseMean(4, 4)

    def forward(self, x, a):
        return self.conv(x, self.lin(a))
'''
    assert _lines(source) == []


def test_a_whole_batch_count_and_a_learned_norm_stay_quiet():
    source = '''import torch


def masked_mean(loss, valid):
    return (loss * valid).sum() / valid.sum()


class Proj(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 4)

    def forward(self, x):
        z = self.proj(x)
        return z / z.norm(dim=-1, keepdim=True)
'''
    assert _lines(source) == []


def test_a_rank_or_none_test_is_no_guard_but_a_value_or_size_test_is():
    guarded = "        if {}:\n            out = out / adj"
    for test in ("adj.sum() > 0", "adj.size(0) > 1"):  # a size test can rule out a batch of one
        assert _lines(DENSE_MEAN.replace("        out = out / adj", guarded.format(test))) == []
    # whether adj was passed (SupContrast's `if labels is None and mask is None:`) says nothing of its zeros
    for test in ("adj.dim() == 3", "isinstance(adj, torch.Tensor)", "adj is not None", "x is None or adj is not None"):
        assert _lines(DENSE_MEAN.replace("        out = out / adj", guarded.format(test))) == [13]


JACCARD = '''import torch


def jaccard(confmat):
    confmat = confmat.float()
    return confmat[1, 1] / (confmat[0, 1] + confmat[1, 0] + confmat[1, 1])
'''


def test_a_sum_of_entries_of_the_input_is_reported_and_zero_without_positives():
    assert _lines(JACCARD) == [6]
    confmat = torch.bincount(torch.tensor([0, 0, 0]) * 2 + torch.tensor([0, 0, 0]), minlength=4).reshape(2, 2)
    assert torch.isnan(_run(JACCARD)["jaccard"](confmat))  # neither preds nor target has a positive
    fixed = fix_source(JACCARD, "t.py", CONFIG, unsafe=True)[0]
    assert _lines(fixed) == [] and _run(fixed)["jaccard"](confmat) == 0


@pytest.mark.parametrize("change", [
    ("confmat[0, 1] + confmat[1, 0] + confmat[1, 1]", "confmat[0, 1] + other[1, 0]"),  # two tensors
    ("(confmat[0, 1] + confmat[1, 0] + confmat[1, 1])", "(confmat[0, 1] + confmat[1, 0] + confmat[1, 1] + 1e-6)"),
])
def test_entries_of_two_tensors_or_guarded_are_quiet(change):
    assert _lines(JACCARD.replace(*change).replace("def jaccard(confmat)", "def jaccard(confmat, other=None)")) == []


def test_rows_of_a_random_draw_passed_in_the_file_are_never_all_zero():
    source = '''import torch


def slerp(a, b, t):
    a = a / a.norm(dim=-1, keepdim=True)
    b = b / b.norm(dim=-1, keepdim=True)
    return a * (1 - t) + b * t


def sample(n, d):
    z0, z1 = torch.randn([n * 2, d]).chunk(2)
    return slerp(z0, z1, 0.5)
'''
    assert _lines(source) == []
    assert _lines(source.replace("torch.randn([n * 2, d]).chunk(2)", "load(n), load(d)")) == [5, 6]


def test_a_norm_of_a_model_forward_input_with_no_caller_in_the_file_is_quiet():
    """The features a forward normalises come from the layer before; a sum over adjacency rows is reported."""
    source = '''import torch


class Normalise(torch.nn.Module):
    def forward(self, x):
        return x / x.norm(dim=-1, keepdim=True)
'''
    assert _lines(source) == []
    assert _lines(source.replace("x.norm(dim=-1, keepdim=True)", "x.sum(dim=-1, keepdim=True)")) == [6]
