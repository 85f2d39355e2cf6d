"""Shape mismatch: the second Linear expects 30 features, the first gives 20."""
import torch


def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad()
    logits = model(inputs)
    loss = torch.nn.functional.cross_entropy(logits, targets)
    loss.backward()
    optimizer.step()


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(10, 20), torch.nn.ReLU(), torch.nn.Linear(30, 5))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
inputs = torch.randn(8, 10)
targets = torch.randint(0, 5, (8,))
print("starting")
train_step(model, optimizer, inputs, targets)
