"""Constant tensors built on the host and moved every step (TRN503); the fix
creates them with `device=`."""
import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cpu")
model = nn.Linear(8, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(4, 8), torch.randint(0, 2, (4,))) for _ in range(5)]

for x, y in data:
    x, y = x.to(device), y.to(device)
    weights = torch.tensor([0.3, 0.7]).to(device)  # expect: TRN503
    bias = torch.zeros(x.size(0), 2).to(device)  # expect: TRN503
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x) + bias, y, weight=weights)
    loss.backward()
    optimizer.step()
print(f"{loss.item():.4f}")
