"""The forward pass runs under torch.no_grad(), so the loss has no graph to backpropagate."""
import torch
from torch import nn

model = nn.Linear(6, 2)
x, y = torch.randn(4, 6), torch.randint(0, 2, (4,))
with torch.no_grad():
    logits = model(x)
loss = nn.functional.cross_entropy(logits, y)
loss.backward()
