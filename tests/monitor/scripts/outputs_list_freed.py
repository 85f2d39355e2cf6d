"""Healthy for `watch`: outputs kept with their graphs (TRN101 statically) but the list is emptied
every 20 steps once its metric is computed: a cache the program frees."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
outputs = []
for step in range(1, 151):
    x = torch.randn(32, 64)
    optimizer.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    outputs.append(model(torch.randn(32, 64)))
    if step % 20 == 0:
        print(f"step {step} mean output {torch.cat(outputs).mean().item():.4f}")
        outputs.clear()
