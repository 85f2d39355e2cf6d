"""A small regression that converges early and then sits at its noise floor for the rest of the
run: a flat loss, but a low one, and correct code."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(36)
X = torch.randn(4096, 8)
y = X @ torch.randn(8, 1) + 0.05 * torch.randn(4096, 1)
loader = DataLoader(TensorDataset(X, y), batch_size=128, shuffle=True)
model = nn.Linear(8, 1)
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
criterion = nn.MSELoss()
for epoch in range(12):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.5f}")
