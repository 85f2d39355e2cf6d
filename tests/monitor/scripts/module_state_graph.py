"""State kept on a module between steps.

    attribute    class centers, a running average of the batch features in `self.centers`, not detached
    buffer       a batch norm written in Python: registered running-stat buffers updated outside no_grad
    no-grad      the same batch norm with the update under torch.no_grad() (correct)
    last-output  the module keeps its last output (`self.last = out`): one step's graph, replaced each step
"""
import sys

import torch
from torch import nn

torch.manual_seed(0)
variant = sys.argv[1]


class Centers(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(16, 32)
        self.centers = torch.zeros(4, 32)

    def forward(self, x, y):
        feats = self.body(x)
        one_hot = nn.functional.one_hot(y, 4).float()
        self.centers = 0.9 * self.centers + 0.1 * (one_hot.t() @ feats) / one_hot.sum(0).clamp(min=1).unsqueeze(1)
        return feats - self.centers.detach()[y]


class PyNorm(nn.Module):
    def __init__(self, no_grad: bool, keep_output: bool = False):
        super().__init__()
        self.body = nn.Linear(16, 32)
        self.no_grad, self.keep_output = no_grad, keep_output
        self.register_buffer("running_mean", torch.zeros(32))

    def forward(self, x, y):
        h = self.body(x)
        mean = h.mean(0)
        if self.no_grad:
            with torch.no_grad():
                self.running_mean = 0.9 * self.running_mean + 0.1 * mean
        else:
            self.running_mean = 0.9 * self.running_mean + 0.1 * mean
        out = h - mean
        if self.keep_output:
            self.last = out
        return out


model = {"attribute": lambda: Centers(), "buffer": lambda: PyNorm(False),
         "no-grad": lambda: PyNorm(True), "last-output": lambda: PyNorm(True, keep_output=True)}[variant]()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(120):
    x, y = torch.randn(32, 16), torch.randint(0, 4, (32,))
    loss = model(x, y).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("done")
