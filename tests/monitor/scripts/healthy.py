"""A small classifier that trains normally (prints the same lines with or without the monitor)."""
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
inputs = torch.randn(256, 10)
data = TensorDataset(inputs, (inputs[:, 0] > 0).long() + (inputs[:, 1] > 0).long())
loader = DataLoader(data, batch_size=32, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(epochs):
    total = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch} loss {total / len(loader):.4f}")
