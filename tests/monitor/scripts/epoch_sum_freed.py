"""Healthy for `watch`: a per-epoch sum kept with its graph (TRN101 statically) but freed at the end
of every epoch: the chain of graphs never outlives 50 steps. A cache the program frees."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
for epoch in range(6):
    epoch_loss = 0
    for step in range(50):
        x = torch.randn(64, 32)
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        epoch_loss = epoch_loss + loss
    print(f"epoch {epoch} loss {epoch_loss.item() / 50:.4f}")
