"""The hidden layers are kept in a plain Python list instead of nn.ModuleList, so
model.parameters() only holds the output layer: the optimizer never updates the hidden layers,
which stay at their random initial weights."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(10)
X = torch.randn(4096, 16)
y = (torch.sin(X[:, 0] * 2) + X[:, 1] * X[:, 2] > 0).long()
loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True)


class MLP(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = [nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]
        self.out = nn.Linear(sizes[-1], 2)

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return self.out(x)


model = MLP([16, 128, 128, 64])
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
for epoch in range(5):
    correct = 0
    for xb, yb in loader:
        optimizer.zero_grad()
        out = model(xb)
        loss = criterion(out, yb)
        loss.backward()
        optimizer.step()
        correct += (out.argmax(1) == yb).sum().item()
    print(f"epoch {epoch}: loss {loss.item():.4f} acc {correct / len(X):.3f}")
