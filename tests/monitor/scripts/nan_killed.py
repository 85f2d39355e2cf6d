"""nan_lr.py's run (the loss is inf at optimizer step 4), killed with SIGKILL right after that step.

No exit handler runs, so only what the monitor wrote before the kill is on disk: its records
are written in batches, but a non-finite step's must reach the file at once.
"""
import math
import os
import signal

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=5.0)
x = torch.randn(64, 8)
y = x.sum(dim=1, keepdim=True)
for step in range(1, 61):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    if not math.isfinite(loss.item()):
        os.kill(os.getpid(), signal.SIGKILL)
