"""SGD with lr=1e-7: the gradients are fine, the weights barely move, the loss stays where it began."""
import torch
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
x = torch.randn(4096, 20); y = (x[:, 0] > 0).long()
model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
opt = torch.optim.SGD(model.parameters(), lr=1e-7)
loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
for epoch in range(3):
    for xb, yb in loader:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
