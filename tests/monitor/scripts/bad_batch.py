"""One corrupt batch (inputs scaled by 1000, as an un-normalised image would be) at step 30:
the gradient norm jumps far above its running median; the loss overflows a few steps later."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
for step in range(1, 41):
    x = torch.randn(64, 8)
    if step == 30:
        x = x * 1000.0
    y = x.sum(dim=1, keepdim=True)
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
print("done")
