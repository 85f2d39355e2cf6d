"""Each epoch the features and the labels are shuffled with two separate calls to
np.random.shuffle, so the pairing between a sample and its label is lost: the classifier can
only learn how often each class occurs."""
import numpy as np
import torch
from torch import nn

rng = np.random.default_rng(15)
np.random.seed(15)
torch.manual_seed(15)
n, d, classes = 6000, 24, 4
y_all = rng.choice(classes, size=n, p=[0.4, 0.3, 0.2, 0.1])
X_all = rng.normal(size=(classes, d))[y_all] * 2 + rng.normal(size=(n, d))
X_all = X_all.astype(np.float32)

model = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, classes))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
batch = 64
for epoch in range(3):
    np.random.shuffle(X_all)
    np.random.shuffle(y_all)
    for i in range(0, n, batch):
        xb = torch.from_numpy(X_all[i:i + batch])
        yb = torch.from_numpy(y_all[i:i + batch]).long()
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
