"""Sensor regression where a few records were logged in millimetres instead of metres. They sit
together in the file, so with shuffle=False one batch per epoch is all bad: the loss jumps by
orders of magnitude at that batch and falls back afterwards."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(17)
n, d = 6400, 12
X = torch.randn(n, d)
y = X @ torch.randn(d, 1) * 0.5 + 0.05 * torch.randn(n, 1)
y[3200:3264] *= 1000.0  # one block of records in the wrong unit

loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=False)
model = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.MSELoss()
for epoch in range(3):
    for i, (xb, yb) in enumerate(loader):
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        if i % 25 == 0:
            print(f"epoch {epoch} batch {i}: loss {loss.item():.4g}")
