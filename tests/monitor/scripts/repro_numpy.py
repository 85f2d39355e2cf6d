"""Augmentation noise from NumPy's global RNG, never seeded (torch is seeded)."""
import numpy as np
import torch

torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randn(16, 1)
for step in range(20):
    noise = torch.from_numpy(np.random.normal(0, 0.1, size=(16, 4)).astype("float32"))
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x + noise), y)
    loss.backward()
    optimizer.step()
print("done")
