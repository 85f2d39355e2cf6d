"""A correct small-batch classifier that converges: near 0 its per-batch loss and gradient norm
jump by several times their median from one batch to the next (one hard sample in 32)."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(1)
labels = torch.randint(0, 4, (4000,))
X = torch.randn(4, 16)[labels] + torch.randn(4000, 16)
loader = DataLoader(TensorDataset(X, labels), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
