"""A classifier trained without zeroing its gradients (TRN701); the fix inserts
`optimizer.zero_grad()` before the backward. Prints the largest gradient norm seen."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
data = [(torch.randn(4, 8), torch.randint(0, 2, (4,))) for _ in range(30)]


def grad_norm():
    return sum(p.grad.norm() ** 2 for p in model.parameters()).sqrt().item()


def train(epochs):
    largest = 0.0
    for epoch in range(epochs):
        for x, y in data:
            loss = criterion(model(x), y)
            loss.backward()  # expect: TRN701
            largest = max(largest, grad_norm())
            optimizer.step()
    return largest


print(f"{train(2):.4f}")
