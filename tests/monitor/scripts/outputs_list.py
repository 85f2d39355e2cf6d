"""Outputs kept for a metric at the end, with their autograd graphs: `outputs.append(logits)` every
step (TRN101 statically). Each validation output keeps its graph and the activations it saved."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
outputs = []
for step in range(150):
    x = torch.randn(32, 64)
    optimizer.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    logits = model(torch.randn(32, 64))
    outputs.append(logits)
print(f"mean output {torch.cat(outputs).mean().item():.4f}")
