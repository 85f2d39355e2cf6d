import matplotlib.pyplot as plt
import torch
import torch.nn as nn

# Synthetic regression data
torch.manual_seed(2021)
X = torch.linspace(-1, 1, 256).unsqueeze(1)
y = 3 * X ** 3 - X + 0.1 * torch.randn_like(X)


class WideNet(nn.Module):
    def __init__(self, hidden=512):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(1, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.layers(x)


def train(model, num_epochs=1000, lr=1e-3):
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for epoch in range(num_epochs):
        optimizer.zero_grad()
        y_pred = model(X)
        l = loss_fn(y_pred, y)
        l.backward()
        optimizer.step()
        losses.append(l)
    return losses


num_epochs = 1000
model = WideNet()
losses = train(model, num_epochs=num_epochs)

plt.plot(range(num_epochs), losses)
plt.xlabel('epoch')
plt.ylabel('MSE loss')
plt.show()
