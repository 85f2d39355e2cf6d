"""A dataset that holds its own RNG: every worker repeats the same "random" jitter."""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Subset


class JitteredPoints(Dataset):
    def __init__(self, n, seed=0):
        self.points = np.linspace(0.0, 1.0, n, dtype=np.float32)
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return len(self.points)

    def _jitter(self):
        return self.rng.normal(scale=0.01)

    def __getitem__(self, index):
        return torch.tensor([self.points[index], self._jitter()], dtype=torch.float32)


if __name__ == "__main__":
    dataset = JitteredPoints(16)
    train = Subset(dataset, range(12))
    loader = DataLoader(train, batch_size=1, num_workers=2)  # expect: TRN201
    eval_loader = DataLoader(Subset(dataset, range(12, 16)), batch_size=4, num_workers=0)
    jitter = [round(float(batch[0, 1]), 6) for batch in loader]
    print(len(jitter), len(set(jitter)))
