"""A DataLoader with workers under the spawn start method and a lambda as collate_fn."""
import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
    loader = DataLoader(data, batch_size=4, num_workers=2, multiprocessing_context="spawn",
                        collate_fn=lambda batch: batch)
    for batch in loader:
        pass


if __name__ == "__main__":
    main()
