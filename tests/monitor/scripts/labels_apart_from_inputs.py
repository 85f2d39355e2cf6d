"""Labels shuffled apart from their inputs: the model can only learn the class frequencies, and the
loss stays at their entropy while the weights keep moving. Nothing crashes."""
import torch
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
x = torch.randn(4096, 20)
y = (x[:, 0] > 0.5).long()  # imbalanced: chance is their entropy, below ln(2)
y = y[torch.randperm(len(y))]  # labels shuffled apart from their inputs
model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
for epoch in range(3):
    for xb, yb in loader:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
