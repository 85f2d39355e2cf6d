"""A classifier whose head expects 64 features but receives 32: fails on the first batch."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 20), torch.randint(0, 10, (8,))


def train_step(inputs, targets):
    logits = model(inputs)
    loss = nn.functional.cross_entropy(logits, targets)
    loss.backward()
    opt.step()
    return loss.item()


for epoch in range(2):
    train_step(x, y)
