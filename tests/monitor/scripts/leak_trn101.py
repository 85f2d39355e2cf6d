"""TRN101: a validation loss summed with its autograd graph each step; every step's activations stay alive."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
x_val = torch.randn(256, 256)
total_val_loss = 0
for step in range(80):
    x = torch.randn(256, 256)
    optimizer.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    val_loss = model(x_val).pow(2).mean()
    total_val_loss += val_loss
print(f"mean validation loss {total_val_loss.item() / 80:.4f}")
