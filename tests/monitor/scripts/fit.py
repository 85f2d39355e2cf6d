"""One model, three ways: `healthy` fits one batch; `detached` computes the loss on a detached
output; `lr0` never moves the weights."""
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

variant = sys.argv[1] if len(sys.argv) > 1 else "healthy"
torch.manual_seed(0)
data = TensorDataset(torch.randn(512, 20), torch.randint(0, 4, (512,)))
loader = DataLoader(data, batch_size=16, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
head = torch.nn.Linear(4, 4)
params = list(model.parameters()) + list(head.parameters())
optimizer = torch.optim.Adam(params, lr=0.0 if variant == "lr0" else 1e-2)
for epoch in range(20):
    for x, y in loader:
        optimizer.zero_grad()
        features = model(x)
        if variant == "detached":
            features = features.detach()
        loss = torch.nn.functional.cross_entropy(head(features), y)
        loss.backward()
        optimizer.step()
print("done")
