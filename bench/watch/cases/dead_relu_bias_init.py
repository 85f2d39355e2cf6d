"""A custom init sets every bias to -1 "to keep activations sparse"; with small inputs every ReLU
of the first layer is dead from step 0, no gradient reaches the hidden layers, and the loss stays
flat at the level of predicting the mean."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(11)
X = torch.rand(4096, 8) * 0.1
y = (X * torch.arange(1, 9)).sum(1, keepdim=True) * 10
y = (y - y.mean()) / y.std()
loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True)

model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))


def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.uniform_(m.weight, -0.1, 0.1)
        m.bias.data.fill_(-1.0)


model.apply(init_weights)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
criterion = nn.MSELoss()
for epoch in range(6):
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch}: loss {total / len(loader):.4f}")
