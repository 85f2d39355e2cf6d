"""A short training run that does not fail; prints its losses."""
import sys

import torch

torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
inputs, targets = torch.randn(32, 4), torch.randn(32, 1)
for step in range(5):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(inputs), targets)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.6f}")
print("args", sys.argv[1:])
try:
    {}["handled"]
except KeyError:
    print("handled a KeyError")
print("warning line", file=sys.stderr)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
