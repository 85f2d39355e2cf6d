"""The loss is rebuilt from a Python float to "make it require grad" (after an error about a
tensor that does not require grad): backward now runs, but no gradient reaches the model and
the weights never move."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(9)
X = torch.randn(4096, 20)
y = X[:, :5].sum(1, keepdim=True) + 0.1 * torch.randn(4096, 1)
loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True)

model = nn.Sequential(nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.MSELoss()
for epoch in range(5):
    for i, (xb, yb) in enumerate(loader):
        pred = model(xb)
        value = criterion(pred, yb).item()
        loss = torch.tensor(value, requires_grad=True)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
