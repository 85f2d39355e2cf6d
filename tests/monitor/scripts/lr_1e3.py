"""Learning rate 1e3 on a small regression: the loss grows geometrically, then is inf/NaN."""
import torch

torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=1e3)
x = torch.randn(64, 8)
y = x.sum(dim=1, keepdim=True)
for step in range(1, 41):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4g}")
