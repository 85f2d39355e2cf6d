"""Each sample is read from slow network storage in __getitem__ (stood in for by a sleep), with
num_workers=0: the training step waits on the data far longer than it computes."""
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(19)


class RemoteImages(Dataset):
    def __init__(self, n):
        self.labels = torch.randint(0, 10, (n,))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        time.sleep(0.002)  # open + read + decode one file from the network share
        g = torch.Generator().manual_seed(i)
        return torch.randn(3, 16, 16, generator=g), self.labels[i]


loader = DataLoader(RemoteImages(3200), batch_size=32, shuffle=True, num_workers=0)
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(),
                      nn.Linear(256, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
criterion = nn.CrossEntropyLoss()
for epoch in range(1):
    for i, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
