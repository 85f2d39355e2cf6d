"""Epoch loss summed with its graph; the total is used as a tensor after the loop."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(8, 2)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(4, 8), torch.randint(0, 2, (4,))) for _ in range(20)]


def train(epochs):
    history = []
    for epoch in range(epochs):
        total_loss = 0
        for x, y in data:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            total_loss += loss  # expect: TRN101
            history.append(loss)  # expect: TRN101
        print(f"epoch {epoch}: {total_loss.item() / len(data):.4f}")
    return total_loss, history


TOTAL, HISTORY = train(2)
