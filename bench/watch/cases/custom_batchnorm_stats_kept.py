"""A batch norm written in Python, with its running estimates registered as buffers and updated by
hand in forward() (as the thread advises), but outside torch.no_grad() and without detach: each
step's running mean and variance are computed from this step's activations, so the buffers carry
the autograd graph of every step since the first. Nothing raises: the training loss uses the batch
statistics, and backward never reaches the buffers' graph."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class PyBatchNorm1d(nn.Module):
    def __init__(self, features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self.register_buffer("running_mean", torch.zeros(features))
        self.register_buffer("running_var", torch.ones(features))

    def forward(self, x):
        if self.training:
            mean, var = x.mean(0), x.var(0, unbiased=False)
            self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * mean
            self.running_var = (1 - self.momentum) * self.running_var + self.momentum * var
        else:
            mean, var = self.running_mean, self.running_var
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


torch.manual_seed(31)
n, d = 8192, 32
X = torch.randn(n, d)
y = (X[:, :4].sum(1) + 0.5 * X[:, 4] * X[:, 5] > 0).long()
loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(d, 256), PyBatchNorm1d(256), nn.ReLU(),
                      nn.Linear(256, 128), PyBatchNorm1d(128), nn.ReLU(), nn.Linear(128, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()
for epoch in range(4):
    for i, (xb, yb) in enumerate(loader):
        loss = criterion(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
