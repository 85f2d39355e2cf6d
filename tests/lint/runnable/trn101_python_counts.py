"""Python numbers accumulated in a training loop: nothing to flag, nothing to fix."""
import torch
import torch.nn as nn

model = nn.Linear(8, 2)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
seen, correct, running = 0, 0, 0.0
for step in range(5):
    x, y = torch.randn(4, 8), torch.randint(0, 2, (4,))
    out = model(x)
    loss = criterion(out, y)
    aux = out.pow(2).mean()
    total = loss
    total += 0.1 * aux
    optimizer.zero_grad()
    total.backward()
    optimizer.step()
    seen += x.size(0)
    correct += (out.argmax(1) == y).sum().item()
    running += loss.item()
print(seen, correct, running)
