"""Validation switched the model to eval mode and training never switched it back."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Dropout(0.5), torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 8), torch.randn(32, 1)
for epoch in range(3):
    for step in range(10):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    model.eval()  # validation ...
    with torch.no_grad():
        val = torch.nn.functional.mse_loss(model(x), y)
print("done")
