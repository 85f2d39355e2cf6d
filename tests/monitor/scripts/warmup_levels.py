"""Healthy: a buffer pool that fills during warm-up (2.5 MB a step for 55 steps) and then
levels off. Not a leak."""
import torch

torch.manual_seed(0)
model = torch.nn.Linear(64, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
pool = []
for step in range(80):
    x = torch.randn(32, 64)
    optimizer.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    if step < 55:
        pool.append(torch.ones(625_000))  # 2.5 MB
print(f"pool {sum(t.numel() for t in pool) * 4 / 1e6:.0f} MB")
