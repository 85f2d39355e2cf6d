"""A CNN with BatchNorm and Dropout, validated after every epoch: model.eval() for validation and
model.train() at the start of each epoch."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(32)
n = 2400
labels = torch.randint(0, 4, (n,))
images = torch.randn(n, 1, 16, 16)
for k in range(4):
    images[labels == k, :, k * 4:(k + 1) * 4] += 1.5
train = DataLoader(TensorDataset(images[:2000], labels[:2000]), batch_size=32, shuffle=True)
val = DataLoader(TensorDataset(images[2000:], labels[2000:]), batch_size=100)
model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Dropout(0.3), nn.Linear(32 * 4 * 4, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, weight_decay=5e-4)
criterion = nn.CrossEntropyLoss()
for epoch in range(4):
    model.train()
    for xb, yb in train:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        correct = sum((model(xb).argmax(1) == yb).sum().item() for xb, yb in val)
    print(f"epoch {epoch}: loss {loss.item():.4f} val acc {correct / 400:.3f}")
