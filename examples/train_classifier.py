"""A small image-classifier training script with four classic bugs in it.

Runs on CPU in a few seconds on synthetic data:  python examples/train_classifier.py
`traindoctor check examples/` finds:
  - TRN201: DataLoader workers with no worker_init_fn/generator although the run is seeded,
    and the dataset's augmentation draws from its own RandomState (every worker the same);
  - TRN202: numpy is used for augmentation but never seeded;
  - TRN101: the epoch loss is accumulated with its autograd graph (memory grows every step);
  - TRN402: the entropy regulariser takes log() of softmax probabilities, which underflow to 0
    (log -> -inf, NaN gradients): log_softmax is the stable form;
  - TRN406 (strict set): the input standardisation divides by a std that is 0 for a constant row.
"""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class NoisyBlobs(Dataset):
    """Gaussian blobs with random-flip augmentation."""

    def __init__(self, n=512, classes=4, dim=32):
        self.x = torch.randn(n, dim)
        self.y = torch.randint(0, classes, (n,))
        self.x += self.y[:, None].float()
        self.rng = np.random.RandomState(0)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        x = self.x[i]
        if self.rng.rand() < 0.5:
            x = x.flip(0)
        x = x + torch.from_numpy(np.random.normal(0, 0.1, x.shape).astype("float32"))
        return x, self.y[i]


class MLP(nn.Module):
    def __init__(self, dim=32, classes=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, classes))

    def forward(self, x):
        x = (x - x.mean(dim=-1, keepdim=True)) / x.std(dim=-1, keepdim=True)
        return self.net(x)


def train(epochs, workers):
    torch.manual_seed(0)
    model = MLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss()
    loader = DataLoader(NoisyBlobs(), batch_size=64, shuffle=True, num_workers=workers)
    for epoch in range(epochs):
        total_loss = 0
        for x, y in loader:
            optimizer.zero_grad()
            logits = model(x)
            probs = F.softmax(logits, dim=-1)
            entropy = -(probs * torch.log(probs)).sum(dim=-1).mean()
            loss = criterion(logits, y) - 0.01 * entropy
            loss.backward()
            optimizer.step()
            total_loss += loss
        print(f"epoch {epoch}: loss {total_loss.item() / len(loader):.4f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    train(args.epochs, args.workers)
