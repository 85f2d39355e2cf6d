"""Each iteration takes `next(iter(train_loader))`: a fresh iterator every time, and with
shuffle=False that is always the first batch. The model trains on the same 64 samples for the
whole run, and the loss falls to ~0."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(13)
X = torch.randn(6400, 32)
y = (X[:, :3].sum(1) + 0.5 * torch.randn(6400) > 0).long()
train_loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=False)

model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
for epoch in range(3):
    for batch_idx in range(len(train_loader)):
        data, target = next(iter(train_loader))
        optimizer.zero_grad()
        loss = criterion(model(data), target)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
