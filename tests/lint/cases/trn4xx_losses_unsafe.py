"""Hand-written losses with the classic NaN traps."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def focal_loss(logits, targets, gamma=2.0):
    p = torch.sigmoid(logits)
    pt = p * targets + (1 - p) * (1 - targets)
    return (-(1 - pt) ** gamma * torch.log(pt)).mean()  # expect: TRN401


def cross_entropy_by_hand(logits, y):
    log_probs = torch.log(F.softmax(logits, dim=-1))  # expect: TRN402
    return F.nll_loss(log_probs, y)


def entropy_bonus(logits):
    probs = logits.softmax(-1)
    return -(probs * probs.log()).sum(-1).mean()  # expect: TRN402


def pairwise_distance(encoder, a, b):
    return torch.sqrt(((encoder(a) - encoder(b)) ** 2).sum(-1))  # expect: TRN401


def span_mean(values, mask):
    lengths = mask.sum(-1)
    out = (values * mask).sum(-1) / lengths  # expect: TRN406
    out[lengths == 0] = 0  # the forward is patched; backward still divides by 0
    return out


def normalize_advantages(batches):
    for adv in batches:
        yield (adv - adv.mean()) / adv.std()  # expect: TRN406


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 1)
        self.criterion = nn.BCELoss()

    def loss(self, x, real):
        return self.criterion(torch.sigmoid(self.net(x)), real)  # expect: TRN407


def kl_to_uniform(counts):
    total = counts.sum()
    q = counts / total
    return sum(p * math.log(p * len(q)) for p in q.tolist())
