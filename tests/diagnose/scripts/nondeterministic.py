"""Deterministic mode is on, then an unpooling decoder uses max_unpool2d (no deterministic kernel)."""
import torch
from torch import nn

torch.use_deterministic_algorithms(True)
pool = nn.MaxPool2d(2, return_indices=True)
unpool = nn.MaxUnpool2d(2)
images = torch.randn(2, 3, 8, 8)
pooled, indices = pool(images)
restored = unpool(pooled, indices)
