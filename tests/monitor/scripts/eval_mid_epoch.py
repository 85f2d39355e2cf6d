"""A validation in the middle of each epoch switches the model to eval mode; model.train()
runs at the start of every epoch, so the rest of each epoch trains in eval mode."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Dropout(0.5), torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 8), torch.randn(32, 1)
for epoch in range(3):
    model.train()
    for step in range(10):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        if step == 4:
            model.eval()  # validation ...
            with torch.no_grad():
                val = torch.nn.functional.mse_loss(model(x), y)
print("done")
