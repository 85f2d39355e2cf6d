"""Pose estimation style target generation: __getitem__ draws a Gaussian heatmap per joint with
Python loops over the pixels. With num_workers=0 the model waits on this for most of each step."""
import math

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(20)
JOINTS, SIZE = 4, 16


class PoseDataset(Dataset):
    def __init__(self, n):
        self.joints = torch.rand(n, JOINTS, 2) * SIZE

    def __len__(self):
        return len(self.joints)

    def generate_target(self, joints):
        target = [[[0.0] * SIZE for _ in range(SIZE)] for _ in range(JOINTS)]
        for j in range(JOINTS):
            mx, my = joints[j].tolist()
            for yy in range(SIZE):
                for xx in range(SIZE):
                    target[j][yy][xx] = math.exp(-((xx - mx) ** 2 + (yy - my) ** 2) / 8.0)
        return torch.tensor(target)

    def __getitem__(self, i):
        target = self.generate_target(self.joints[i])
        image = target.sum(0, keepdim=True).repeat(3, 1, 1) + 0.1 * torch.randn(3, SIZE, SIZE)
        return image, target


loader = DataLoader(PoseDataset(1600), batch_size=16, shuffle=True)
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, JOINTS, 3, padding=1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.MSELoss()
for epoch in range(2):
    for i, (image, target) in enumerate(loader):
        optimizer.zero_grad()
        loss = criterion(model(image), target)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.5f}")
