"""A seeded program whose dataset augments with the global torch, random and numpy
RNGs, read by two workers: torch >= 1.9 reseeds all three per worker from the
seeded parent, so two runs produce the same batches and nothing is flagged."""
import random
import sys

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Augmented(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.tensor([i + torch.rand(()).item(), random.random(), np.random.rand()])


if __name__ == "__main__":
    torch.manual_seed(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    random.seed(0)
    np.random.seed(0)
    loader = DataLoader(Augmented(), batch_size=2, shuffle=True, num_workers=2)
    for batch in loader:
        print(" ".join(f"{v:.6f}" for v in batch.flatten().tolist()))
