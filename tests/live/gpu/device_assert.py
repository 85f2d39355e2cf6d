"""Device-side assert: a cross-entropy target outside the class range (a pad value)."""
import torch

torch.manual_seed(0)
device = torch.device("cuda")
model = torch.nn.Linear(16, 10).to(device)
inputs = torch.randn(8, 16, device=device)
targets = torch.randint(0, 10, (8,), device=device)
targets[3] = 10  # one past the last class
loss = torch.nn.functional.cross_entropy(model(inputs), targets)
print(loss.item())
