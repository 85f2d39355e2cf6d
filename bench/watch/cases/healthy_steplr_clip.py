"""Regression with SGD, a StepLR schedule that divides the learning rate by 10 every 150 steps
(a normal schedule), and gradient clipping."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(34)
X = torch.randn(9600, 10)
y = torch.sin(X[:, :1] * 2) + X[:, 1:2] ** 2 + 0.1 * torch.randn(9600, 1)
loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(10, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=150, gamma=0.1)
criterion = nn.MSELoss()
for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
    print(f"epoch {epoch}: loss {loss.item():.4f} lr {scheduler.get_last_lr()[0]:.2g}")
