"""Learning rate 1e3: the loss grows geometrically, overflows, and the script stops at the
first non-finite loss (as a NaN check in a training loop does)."""
import torch

torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=1e3, momentum=0.9, weight_decay=0.01)
x = torch.randn(64, 8)
y = x.sum(dim=1, keepdim=True)
for step in range(1, 200):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    if not torch.isfinite(loss):
        raise FloatingPointError(f"loss is {loss.item()} at step {step}")
    loss.backward()
    optimizer.step()
