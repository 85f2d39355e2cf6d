"""Manual batching over a tensor dataset: the slice uses `X[:batch_size]` instead of
`X[i:i + batch_size]`, so every step sees the same first batch."""
import torch
from torch import nn

torch.manual_seed(14)
X = torch.randn(8000, 20)
y = X @ torch.randn(20, 1) + 0.3 * torch.randn(8000, 1)

model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
criterion = nn.MSELoss()
batch_size = 50
for epoch in range(3):
    perm = torch.randperm(len(X))
    X, y = X[perm], y[perm]
    for i in range(0, len(X), batch_size):
        xb, yb = X[:batch_size], y[:batch_size]
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
