"""zero_grad between backward and step (TRN702): the weights never change. The
unsafe fix swaps zero_grad and the step. Prints whether the weights moved."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(8, 2)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(4, 8), torch.randint(0, 2, (4,))) for _ in range(10)]
before = model.weight.detach().clone()

for x, y in data:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.zero_grad()  # expect: TRN702
    optimizer.step()

print("MOVED", not torch.equal(before, model.weight.detach()))
