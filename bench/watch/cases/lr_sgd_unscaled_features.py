"""House-price style regression on raw (unscaled) features with plain SGD (linear regression). The features are in
the thousands, so lr=1e-3 is far too large for them: the loss grows each step until it overflows."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
n = 2048
area = torch.rand(n, 1) * 3000 + 500        # square feet
rooms = torch.randint(1, 8, (n, 1)).float()
age = torch.rand(n, 1) * 80
X = torch.cat([area, rooms, age], dim=1)
y = 150 * area + 10000 * rooms - 500 * age + 20000 * torch.randn(n, 1)
y = y / 1000.0  # price in thousands

loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True)
model = nn.Linear(3, 1)  # linear regression on the raw features
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
criterion = nn.MSELoss()

for epoch in range(8):
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch}: loss {total / len(loader):.4g}")
