"""Epoch averages in the wrong units: per-batch mean losses divided by the number
of samples, correct counts divided by the number of batches. The unsafe fixes
swap the denominators; both versions run and the fixed averages are the right size."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = TensorDataset(torch.randn(40, 4), torch.randint(0, 3, (40,)))
loader = DataLoader(data, batch_size=8)
model = nn.Linear(4, 3)
criterion = nn.CrossEntropyLoss()


def evaluate(model, loader):
    total_loss, correct = 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            total_loss += criterion(out, y).item()
            correct += (out.argmax(1) == y).sum().item()
    return total_loss / len(loader.dataset), correct / len(loader)  # expect: TRN304, TRN304


loss, accuracy = evaluate(model, loader)
print(loss, accuracy)
LOSS, ACCURACY = loss, accuracy
