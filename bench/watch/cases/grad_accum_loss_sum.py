"""Gradient accumulation that sums the micro-batch losses into one tensor and calls backward on the
sum every 4 micro-batches, then starts a new sum: the graphs of 4 micro-batches are alive at once,
and freed at each update. Correct code: nothing is leaking."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(23)
X = torch.randn(8192, 32)
y = (X[:, :4].sum(1) > 0).long()
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)

model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
criterion = nn.CrossEntropyLoss()
accumulate = 4
for epoch in range(2):
    loss_sum = 0
    for i, (xb, yb) in enumerate(loader):
        loss_sum = loss_sum + criterion(model(xb), yb) / accumulate
        if (i + 1) % accumulate == 0:
            optimizer.zero_grad()
            loss_sum.backward()
            optimizer.step()
            loss_sum = 0
    print(f"epoch {epoch}: done")
