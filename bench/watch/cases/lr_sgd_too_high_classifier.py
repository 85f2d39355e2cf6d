"""SGD with momentum at lr=2.0 on a small classifier: the loss climbs from 2.3 to 10-20 within the
first epoch and stays there, finite but far above where it started."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(2)
n, d, classes = 4096, 32, 10
centers = torch.randn(classes, d) * 0.5
labels = torch.randint(0, classes, (n,))
X = centers[labels] + torch.randn(n, d)
loader = DataLoader(TensorDataset(X, labels), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(d, 256), nn.Tanh(), nn.Linear(256, classes))
optimizer = torch.optim.SGD(model.parameters(), lr=2.0, momentum=0.9)
criterion = nn.CrossEntropyLoss()
for epoch in range(5):
    for i, (xb, yb) in enumerate(loader):
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        if i % 16 == 0:
            print(f"epoch {epoch} batch {i}: loss {loss.item():.4g}")
