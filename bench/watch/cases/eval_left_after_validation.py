"""Accuracy is checked on a validation set every 50 iterations. check_accuracy() switches the
model to eval mode and never back: model.train() is only called once, before the loop, so
dropout and batch norm stay in eval mode for the rest of training."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(7)
n, d = 6000, 40
labels = torch.randint(0, 5, (n,))
X = torch.randn(5, d)[labels] * 1.5 + torch.randn(n, d)
train = DataLoader(TensorDataset(X[:5000], labels[:5000]), batch_size=50, shuffle=True)
val = DataLoader(TensorDataset(X[5000:], labels[5000:]), batch_size=200)

model = nn.Sequential(nn.Linear(d, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Dropout(0.5),
                      nn.Linear(128, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Dropout(0.5),
                      nn.Linear(128, 5))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()


def check_accuracy(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for xb, yb in loader:
            correct += (model(xb).argmax(1) == yb).sum().item()
            total += len(yb)
    return correct / total


model.train()
iteration = 0
for epoch in range(3):
    for xb, yb in train:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        iteration += 1
        if iteration % 50 == 0:
            print(f"iter {iteration}: loss {loss.item():.3f} val acc {check_accuracy(model, val):.3f}")
