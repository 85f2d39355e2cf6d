"""Two losses share an encoder output; the second backward walks a graph the first already freed."""
import torch
from torch import nn

encoder, head_a, head_b = nn.Linear(8, 8), nn.Linear(8, 1), nn.Linear(8, 1)
x = torch.randn(4, 8)
hidden = torch.tanh(encoder(x))
loss_a = head_a(hidden).pow(2).mean()
loss_b = head_b(hidden).pow(2).mean()
loss_a.backward()
loss_b.backward()
