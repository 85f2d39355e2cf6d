"""A small CNN on 28x28 images; the loop calls backward and step but never zero_grad, so each
step applies the sum of every gradient so far."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(6)
n = 2048
labels = torch.randint(0, 4, (n,))
images = torch.randn(n, 1, 28, 28) * 0.5
for k in range(4):  # each class lights up one quadrant
    r, c = divmod(k, 2)
    images[labels == k, :, r * 14:(r + 1) * 14, c * 14:(c + 1) * 14] += 1.0
loader = DataLoader(TensorDataset(images, labels), batch_size=32, shuffle=True)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 7 * 7, 4)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
criterion = nn.CrossEntropyLoss()
for epoch in range(3):
    running = 0.0
    for i, (xb, yb) in enumerate(loader):
        output = model(xb)
        loss = criterion(output, yb)
        loss.backward()
        optimizer.step()
        running += loss.item()
    print(f"epoch {epoch}: loss {running / len(loader):.4f}")
