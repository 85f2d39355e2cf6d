"""Learning rate 1e3 with AMP's GradScaler in the loop (CPU, scale 1 so it never skips a step): the
loss grows geometrically, overflows, and the script stops at the first non-finite loss."""
import torch

torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=1e3, momentum=0.9)
scaler = torch.amp.GradScaler("cpu", init_scale=1.0)
x = torch.randn(64, 8)
y = x.sum(dim=1, keepdim=True)
for step in range(1, 500):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    if not torch.isfinite(loss):
        raise FloatingPointError(f"loss is {loss.item()} at step {step}")
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
