"""A dataset that creates its RNG in __init__, read through DataLoader workers."""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Jitter(Dataset):
    def __init__(self, n):
        self.n = n
        self.rng = np.random.default_rng()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor([self.rng.random()])


if __name__ == "__main__":
    loader = DataLoader(Jitter(8), batch_size=1, num_workers=2)  # expect: TRN201
    values = [float(batch) for batch in loader]
    # worker 0 serves items 0, 2, 4, ... and worker 1 items 1, 3, 5, ...
    print("IDENTICAL" if values[0::2] == values[1::2] else "DISTINCT")
