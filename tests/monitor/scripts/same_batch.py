"""Where each step's batch comes from (argv[1]):
- next-iter: `next(iter(loader))` every step, shuffle=False: always the first batch (a bug);
- slice: `X[:batch]` that ignores the loop index: always the first rows (a bug);
- full-batch: the whole (small) dataset every step (correct: full-batch training);
- loop: `for x, y in loader` (correct)."""
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

variant = sys.argv[1]
torch.manual_seed(0)
X = torch.randn(3200 if variant != "full-batch" else 64, 8)
y = (X[:, 0] > 0).long()
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=False)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)


def train_step(xb, yb):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(xb), yb)
    loss.backward()
    optimizer.step()


for i in range(100):
    if variant == "next-iter":
        xb, yb = next(iter(loader))
    elif variant == "slice":
        xb, yb = X[:32], y[:32]
    elif variant == "full-batch":
        xb, yb = X, y
    else:
        break
    train_step(xb, yb)
if variant == "loop":
    for xb, yb in loader:
        train_step(xb, yb)
