"""The optimizer is built, then the model is rebuilt: step() updates parameters nothing uses."""
import torch

torch.manual_seed(0)


def make_model():
    return torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))


model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
model = make_model()  # e.g. a fresh copy for a new run, after the optimizer
x = torch.randn(1024, 20)
y = (x[:, 0] > 0).long()
for i in range(0, 1024, 32):
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x[i:i + 32]), y[i:i + 32])
    loss.backward()
    optimizer.step()
