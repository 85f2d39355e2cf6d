"""Follows the PyTorch reproducibility notes: nothing to report."""
import random

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

SEED = 1234


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


def main():
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    data = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    g = torch.Generator()
    g.manual_seed(SEED)
    loader = DataLoader(data, batch_size=8, shuffle=True, num_workers=2,
                        worker_init_fn=seed_worker, generator=g)
    val_loader = DataLoader(data, batch_size=8, num_workers=2, worker_init_fn=seed_worker, generator=g)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.2), torch.nn.Linear(8, 2))
    noise = np.random.normal(size=4)
    random.shuffle(list(range(10)))
    for x, y in loader:
        model(x).sum().backward()
    return noise, val_loader


if __name__ == "__main__":
    main()
