"""The case of issue 28: `running = running + loss` for 300 steps, inside a function. The loss was
backpropagated (its saved tensors are freed), but every step's graph stays chained to the sum."""
import torch


def train(steps: int = 300) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    running = 0
    for step in range(steps):
        x = torch.randn(64, 32)
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        running = running + loss
    print(f"mean loss {running.item() / steps:.4f}")


train()
