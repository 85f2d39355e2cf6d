"""A plain, correct MLP classifier: shuffled DataLoader, zero_grad/backward/step, Adam."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(31)
n, d, classes = 6000, 20, 5
labels = torch.randint(0, classes, (n,))
X = torch.randn(classes, d)[labels] + torch.randn(n, d)
loader = DataLoader(TensorDataset(X, labels), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(d, 128), nn.ReLU(), nn.Linear(128, classes))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
for epoch in range(4):
    running = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        running += loss.item()
    print(f"epoch {epoch}: loss {running / len(loader):.4f}")
