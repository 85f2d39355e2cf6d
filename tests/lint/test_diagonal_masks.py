"""A mask that zeroes only the diagonal (the self-pairs of a contrastive loss) keeps every other entry of a
row, so the row sum of a positive value times it is not 0 (analysis/diagonal_mask.py, the `offdiag` zero
fact of analysis/values.py). SupContrast's `logits_mask = torch.scatter(torch.ones_like(mask), 1,
torch.arange(n).view(-1, 1), 0)`, `1 - torch.eye(n)` and `~torch.eye(n, dtype=torch.bool)` are read as
such, whatever they are named: TRN401 stays quiet on `log((exp(logits) * logits_mask).sum(1))`. Seen in
wvangansbeke/Unsupervised-Classification's SimCLR loss (h/prec10 eighth batch, dev group A); before, the
name `logits_mask` made the mask "possibly all zero".

Look-alikes that stay found: a mask from outside (a parameter), a scatter along dim 0 (it zeroes a whole
column), a scatter at an index that is not `arange` (labels: several zeros per column), the diagonal mask
times a mask from outside (a padded row is all zero), and the diagonal mask times a softmax, which can itself
underflow to 0. The torch facts are checked."""

from __future__ import annotations

import torch

from project_helpers import functions_reporting

PROGRAM = """\
import torch
import torch.nn.functional as F


def supcon_scatter(features, temperature=0.1):
    b = features.shape[0]
    mask = torch.eye(b, dtype=torch.float32).cuda()
    contrast = torch.cat(torch.unbind(features, dim=1), dim=0)
    logits = torch.matmul(features[:, 0], contrast.T) / temperature
    logits_max, _ = torch.max(logits, dim=1, keepdim=True)
    logits = logits - logits_max.detach()
    mask = mask.repeat(1, 2)
    logits_mask = torch.scatter(torch.ones_like(mask), 1, torch.arange(b).view(-1, 1).cuda(), 0)
    mask = mask * logits_mask
    exp_logits = torch.exp(logits) * logits_mask
    log_prob = logits - torch.log(exp_logits.sum(1, keepdim=True))
    return -((mask * log_prob).sum(1) / mask.sum(1)).mean()


def eye_complement(sim):
    self_mask = 1 - torch.eye(sim.shape[0], device=sim.device)
    return -torch.log((torch.exp(sim) * self_mask).sum(dim=1))


def bool_eye_complement(sim):
    pair_mask = ~torch.eye(sim.shape[0], dtype=torch.bool)
    return -torch.log((sim.exp() * pair_mask).sum(1))


def mask_from_outside(sim, pair_mask):
    return -torch.log((torch.exp(sim) * pair_mask).sum(1))


def scatter_along_rows(sim):
    b = sim.shape[0]
    logits_mask = torch.scatter(torch.ones_like(sim), 0, torch.arange(b).view(-1, 1), 0)
    return -torch.log((torch.exp(sim) * logits_mask).sum(1))


def scatter_at_labels(sim, labels):
    logits_mask = torch.scatter(torch.ones_like(sim), 1, labels.view(-1, 1), 0)
    return -torch.log((torch.exp(sim) * logits_mask).sum(1))


def padded_pairs_without_the_diagonal(sim, pad_mask):
    pairs = pad_mask * (1 - torch.eye(sim.shape[0]))
    return -torch.log((torch.exp(sim) * pairs).sum(1))


def diagonal_mask_of_a_softmax(sim):
    self_mask = 1 - torch.eye(sim.shape[0])
    return -torch.log((F.softmax(sim, dim=1) * self_mask).sum(1))
"""


def test_a_sum_over_a_diagonal_free_mask_is_not_reported():
    found = functions_reporting(PROGRAM, "TRN401", "losses.py")
    assert not found & {"supcon_scatter", "eye_complement", "bool_eye_complement"}


def test_masks_that_can_empty_a_row_stay_reported():
    found = functions_reporting(PROGRAM, "TRN401", "losses.py")
    assert {"mask_from_outside", "scatter_along_rows", "scatter_at_labels", "padded_pairs_without_the_diagonal",
            "diagonal_mask_of_a_softmax"} <= found


def test_torch_the_scatter_zeroes_exactly_the_diagonal():
    b = 3
    mask = torch.eye(b).repeat(1, 2)
    logits_mask = torch.scatter(torch.ones_like(mask), 1, torch.arange(b).view(-1, 1), 0)
    expected = torch.ones(b, 2 * b)
    expected[range(b), range(b)] = 0
    assert torch.equal(logits_mask, expected)
    assert torch.equal(logits_mask, torch.cat([1 - torch.eye(b), torch.ones(b, b)], dim=1))
    assert torch.equal(~torch.eye(b, dtype=torch.bool), (1 - torch.eye(b)).bool())
    # a row sum of a positive value times it keeps the other entries: > 0 even at large negative logits
    logits = torch.full((b, 2 * b), -50.0)
    assert ((torch.exp(logits) * logits_mask).sum(1) > 0).all()
    # along dim 0 the same index zeroes column 0 of every row: a column sum is 0 there
    along_rows = torch.scatter(torch.ones(b, b), 0, torch.arange(b).view(-1, 1), 0)
    assert torch.equal(along_rows[:, 0], torch.zeros(b)) and along_rows[:, 1:].eq(1).all()
    # at repeated labels a row keeps its entries but a column loses several
    at_labels = torch.scatter(torch.ones(b, b), 1, torch.tensor([[0], [0], [0]]), 0)
    assert at_labels.sum(0)[0].item() == 0.0


SAME_LABEL = """\
import torch


def positives_with_self(features, labels, logits):
    labels = labels.contiguous().view(-1, 1)
    mask = torch.eq(labels, labels.T).float()
    return ((mask * logits).sum(1) / mask.sum(1)).mean()


def positives_broadcast(labels, logits):
    mask = (labels[:, None] == labels[None, :]).float()
    return ((mask * logits).sum(1) / mask.sum(1)).mean()


def positives_method_tiled(labels, logits, views):
    mask = labels.view(-1, 1).eq(labels.view(1, -1)).float().repeat(views, views)
    return ((mask * logits).sum(1) / mask.sum(1)).mean()


def positives_without_self(labels, logits, n):
    labels = labels.contiguous().view(-1, 1)
    mask = torch.eq(labels, labels.T).float()
    logits_mask = torch.scatter(torch.ones_like(mask), 1, torch.arange(n).view(-1, 1), 0)
    mask = mask * logits_mask
    return ((mask * logits).sum(1) / mask.sum(1)).mean()


def positives_between_two_sets(labels, queue_labels, logits):
    mask = torch.eq(labels.view(-1, 1), queue_labels.view(1, -1)).float()
    return ((mask * logits).sum(1) / mask.sum(1)).mean()
"""


def test_a_row_sum_of_a_label_compared_with_itself_is_at_least_one():
    found = functions_reporting(SAME_LABEL, "TRN406", "losses.py")
    assert not found & {"positives_with_self", "positives_broadcast", "positives_method_tiled"}
    # once the diagonal is removed, a label that occurs once has no positive (SupContrast with one view, bench
    # case f003); against another set's labels nothing is on the diagonal
    assert {"positives_without_self", "positives_between_two_sets"} <= found


def test_torch_a_self_comparison_holds_its_diagonal_until_it_is_removed():
    labels = torch.tensor([0, 1, 1, 2]).view(-1, 1)
    mask = torch.eq(labels, labels.T).float()
    assert torch.equal(torch.diagonal(mask), torch.ones(4)) and (mask.sum(1) >= 1).all()
    assert torch.equal(mask, (labels.view(-1)[:, None] == labels.view(-1)[None, :]).float())
    assert (mask.repeat(2, 2).sum(1) >= 1).all()
    logits_mask = torch.scatter(torch.ones_like(mask), 1, torch.arange(4).view(-1, 1), 0)
    without_self = (mask * logits_mask).sum(1)
    assert without_self[0].item() == 0.0 and without_self[3].item() == 0.0  # labels 0 and 2 occur once
    logits = torch.randn(4, 4, requires_grad=True)
    ((mask * logits_mask * logits).sum(1) / without_self).mean().backward()
    assert torch.isnan(logits.grad).any()
