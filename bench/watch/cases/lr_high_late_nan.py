"""The loss falls nicely for a while, then becomes nan: one direction of the problem is slightly
unstable at this learning rate and its error grows a little every step until it dominates."""
import torch
from torch import nn

torch.manual_seed(1)
n, d = 4096, 20
scales = torch.ones(d)
scales[0] = 7.5  # one badly scaled feature (e.g. a column in different units)
X = torch.randn(n, d) * scales
w_true = torch.randn(d, 1)
y = X @ w_true + 0.1 * torch.randn(n, 1)

model = nn.Linear(d, 1)
with torch.no_grad():
    model.weight.zero_()
    model.weight[0, 0] = w_true[0, 0] + 1e-4  # nearly right in the steep direction at first
optimizer = torch.optim.SGD(model.parameters(), lr=0.0185)
criterion = nn.MSELoss()

for step in range(600):
    idx = torch.randint(0, n, (256,))
    optimizer.zero_grad()
    loss = criterion(model(X[idx]), y[idx])
    loss.backward()
    optimizer.step()
    if step % 50 == 0:
        print(f"step {step}: loss {loss.item():.4g}")
