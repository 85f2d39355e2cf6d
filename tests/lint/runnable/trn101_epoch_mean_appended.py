"""An epoch sum kept with its graph, then its mean appended to a history list:
one finding (the sum is the cause), and the fixed script appends a float."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]
losses = []
for epoch in range(2):
    epoch_loss = 0
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_loss += loss  # expect: TRN101
    losses.append(epoch_loss / len(loader))
print([round(float(value), 4) for value in losses])
