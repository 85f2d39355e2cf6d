"""A small transformer written carefully: constants under log, eps in norms,
log_softmax for the loss. Nothing here can produce NaN from a 0."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=512):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)
        self.scale = np.log(10000.0) / d_model


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def attention(q, k, v, temperature=1.0):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)) / temperature
    return scores.softmax(dim=-1) @ v


def lm_loss(logits, targets, vocab_size):
    log_probs = F.log_softmax(logits, dim=-1)
    nll = F.nll_loss(log_probs.view(-1, vocab_size), targets.view(-1), ignore_index=-1)
    return nll, math.log(vocab_size)


def cosine(a, b, eps=1e-8):
    a = F.normalize(a, dim=-1)
    b = b / b.norm(dim=-1, keepdim=True).clamp(min=eps)
    return (a * b).sum(-1)


def mean_pool(hidden, attention_mask):
    mask = attention_mask.unsqueeze(-1).float()
    return (hidden * mask).sum(1) / torch.clamp(mask.sum(1), min=1e-9)


def train_epoch(model, loader, optimizer):
    total = 0.0
    for x, y in loader:
        loss = lm_loss(model(x), y, 100)[0]
        loss.backward()  # expect: TRN701
        optimizer.step()
        total += loss.item()
    return total / len(loader)
