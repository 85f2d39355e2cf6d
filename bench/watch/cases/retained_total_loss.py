"""The average training loss is kept for a plot at the end: `total_loss += loss` keeps the
tensor, so every step's autograd graph stays alive until training ends."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(3)
X = torch.randn(8192, 64)
y = (X[:, :8].sum(dim=1) > 0).long()
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()

total_loss = 0
steps = 0
for epoch in range(2):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        total_loss += loss
        steps += 1
    print(f"epoch {epoch}: mean loss so far {total_loss.item() / steps:.4f}")
