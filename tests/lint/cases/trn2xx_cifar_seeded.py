"""CIFAR-style training script: seeds everything; its loaders use global-RNG augmentation with workers,
which torch >= 1.9 reseeds per worker from the seeded parent: reproducible, no finding."""
import argparse
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


def random_flip(image):
    return image.flip(-1) if torch.rand(()) < 0.5 else image


class SyntheticImages(Dataset):
    def __init__(self, n, transform=None):
        self.images = torch.rand(n, 3, 32, 32)
        self.labels = torch.randint(0, 10, (n,))
        self.transform = transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        image = self.images[index]
        if self.transform is not None:
            image = self.transform(image)
        return image, self.labels[index]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 32 * 32, 10)

    def forward(self, x):
        return self.fc(F.relu(self.conv(x)).flatten(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    set_seed(args.seed)

    train_set = SyntheticImages(64, transform=random_flip)
    test_set = SyntheticImages(32)
    train_loader = DataLoader(
        train_set,
        batch_size=16,
        shuffle=True,
        num_workers=args.workers,
    )
    test_loader = DataLoader(test_set, batch_size=16, num_workers=args.workers)

    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for images, labels in train_loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
    correct = 0
    with torch.no_grad():
        for images, labels in test_loader:
            correct += (model(images).argmax(1) == labels).sum().item()
    print(f"loss={loss.item():.4f} correct={correct}")


if __name__ == "__main__":
    main()
