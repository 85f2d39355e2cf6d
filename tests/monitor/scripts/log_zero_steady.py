"""A steady run that hits log(0): binary cross-entropy written by hand, log(sigmoid(z)), on a
DataLoader whose sample 773 (in the batch of step 25) has one extreme, finite feature. sigmoid
underflows to exactly 0 in float32 and log(0) is -inf: the loss is inf at step 25 although the
weights, the batch and the loss before it were all finite and steady."""
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
inputs = torch.randn(1280, 8)
inputs[773, 0] = -1e4
targets = torch.ones(1280, 1)
loader = DataLoader(TensorDataset(inputs, targets), batch_size=32, shuffle=False)
model = torch.nn.Linear(8, 1)
with torch.no_grad():
    model.weight.fill_(0.1)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
for step, (x, y) in enumerate(loader, 1):
    optimizer.zero_grad()
    p = torch.sigmoid(model(x))
    loss = -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()
    loss.backward()
    optimizer.step()
    if step == 30:
        break
print("done")
