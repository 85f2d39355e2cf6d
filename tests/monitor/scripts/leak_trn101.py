"""TRN101: the running total keeps every step's autograd graph, so memory grows each step."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
total_loss = 0
for step in range(120):
    x = torch.randn(256, 256)
    optimizer.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    total_loss += loss
print(f"mean loss {float(total_loss) / 120:.4f}")
