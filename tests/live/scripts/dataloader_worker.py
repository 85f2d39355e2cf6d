"""A DataLoader worker raises while loading one sample."""
import torch
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, index):
        sample = torch.full((3,), float(index))
        if index == 5:
            raise ValueError(f"corrupt sample {index}")
        return sample


if __name__ == "__main__":
    loader = DataLoader(Samples(), batch_size=2, num_workers=2)
    total = 0.0
    for batch in loader:
        total += float(batch.sum())
    print(total)
