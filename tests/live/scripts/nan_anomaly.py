"""NaN under anomaly mode: sqrt of a negative value; its backward returns NaN."""
import torch


def train_step(model, optimizer, batch):
    optimizer.zero_grad()
    out = model(batch)
    shifted = out - 10.0  # every value is negative: sqrt below is NaN
    root = torch.sqrt(shifted)
    loss = root.mean()
    loss.backward()
    optimizer.step()
    return loss


torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
batch = torch.randn(8, 4)
with torch.autograd.detect_anomaly():
    train_step(model, optimizer, batch)
