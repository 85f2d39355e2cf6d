"""Healthy: outputs cached every step (detached, a growing cache) and freed by the program
once it has used them. Not a leak."""
import torch

torch.manual_seed(0)
model = torch.nn.Linear(64, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
cache = []
for step in range(80):
    x = torch.randn(32, 64)
    optimizer.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    cache.append(torch.ones(750_000))  # 3 MB of detached results per step
    if step == 55:
        summary = sum(t.sum().item() for t in cache)
        cache.clear()  # used, then freed
print("done")
