"""Learning rate far too high: weights blow up and the loss is NaN from a known step on.

A linear regression with SGD(lr=5): each step multiplies the error by about
(1 - lr * 2 * E[x^2]) ~ -9, so the loss overflows float32 in a few dozen steps.
"""
import sys

import torch

torch.manual_seed(0)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 60
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=5.0)
x = torch.randn(64, 8)
y = x.sum(dim=1, keepdim=True)
for step in range(1, steps + 1):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4g}")
