"""Gradient accumulation done right: loss / 4 backpropagated each micro-batch, zero_grad and step
every 4 micro-batches."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(35)
X = torch.randn(8192, 24)
y = (X[:, 0] - X[:, 1] > 0).long()
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)
model = nn.Sequential(nn.Linear(24, 128), nn.GELU(), nn.Linear(128, 2))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
accumulation_steps = 4
for epoch in range(2):
    optimizer.zero_grad()
    for i, (xb, yb) in enumerate(loader):
        loss = criterion(model(xb), yb) / accumulation_steps
        loss.backward()
        if (i + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    print(f"epoch {epoch}: loss {loss.item() * accumulation_steps:.4f}")
