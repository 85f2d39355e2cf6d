"""StepLR(step_size=2, gamma=0.1), meant per epoch (argv[1]):
- per-epoch: stepped once per epoch, the lr drops 10x twice (a normal schedule);
- per-batch: stepped every batch, the lr falls 10x every 2 batches, below 1e-100 by the end (a bug)."""
import sys

import torch
from torch import nn

torch.manual_seed(2)
X = torch.randn(1600, 8)
y = X.sum(1, keepdim=True)
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)
for epoch in range(6):
    for i in range(0, 1600, 32):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(X[i:i + 32]), y[i:i + 32])
        loss.backward()
        optimizer.step()
        if sys.argv[1] == "per-batch":
            scheduler.step()
    if sys.argv[1] == "per-epoch":
        scheduler.step()
