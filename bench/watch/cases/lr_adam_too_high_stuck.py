"""An MLP classifier trained with Adam at lr=0.3 (a value meant for SGD). The first steps throw the
ReLU network out; the loss then sits at ln(10) = 2.30, the chance level of 10 balanced classes, for
the rest of the run (at lr=1e-3 the same script reaches ~0.4)."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(2)
n, d, classes = 4096, 32, 10
centers = torch.randn(classes, d) * 0.5
labels = torch.randint(0, classes, (n,))
X = centers[labels] + torch.randn(n, d)

loader = DataLoader(TensorDataset(X, labels), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(d, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, classes))
optimizer = torch.optim.Adam(model.parameters(), lr=0.3)
criterion = nn.CrossEntropyLoss()

for epoch in range(6):
    for i, (xb, yb) in enumerate(loader):
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        if i % 20 == 0:
            print(f"epoch {epoch} batch {i}: loss {loss.item():.4g}")
