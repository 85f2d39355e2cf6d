"""A linear regression fed by a DataLoader over tensors in memory: collating 256 rows is most of
each (tiny) step, yet is only indexing and stacking rows in memory: workers would only add IPC."""
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(3)
X = torch.randn(8192, 2)
y = X.sum(1, keepdim=True)
loader = DataLoader(TensorDataset(X, y), batch_size=256, shuffle=True)
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(4):
    for xb, yb in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(xb), yb).backward()
        optimizer.step()
