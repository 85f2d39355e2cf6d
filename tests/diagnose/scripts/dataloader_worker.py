"""A dataset whose __getitem__ fails on one corrupt sample, read by two worker processes."""
import torch
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        if index == 37:
            raise ValueError(f"sample {index}: corrupt record, expected 16 features")
        return torch.randn(16), index % 4


if __name__ == "__main__":
    loader = DataLoader(Samples(), batch_size=8, num_workers=2)
    for epoch in range(2):
        for features, labels in loader:
            pass
