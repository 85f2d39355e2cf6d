"""A classifier whose loop never zeroes the gradients: backward() adds to .grad, every step applies
the sum of all gradients so far, and the loss spikes and diverges with a learning rate that is fine."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(2048, 20)
y = (x[:, 0] > 0).long()
for epoch in range(3):
    for i in range(0, 2048, 32):
        loss = torch.nn.functional.cross_entropy(model(x[i:i + 32]), y[i:i + 32])
        loss.backward()
        optimizer.step()
