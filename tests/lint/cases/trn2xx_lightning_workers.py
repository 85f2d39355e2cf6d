"""Lightning seeds DataLoader workers itself with seed_everything(workers=True)."""
import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Dataset


class NoisyDataset(Dataset):
    def __len__(self):
        return 100

    def __getitem__(self, index):
        return torch.tensor(np.random.rand(), dtype=torch.float32)


class DataModule(pl.LightningDataModule):
    def setup(self, stage=None):
        self.train_set = NoisyDataset()

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=8, num_workers=4, persistent_workers=True)


if __name__ == "__main__":
    pl.seed_everything(42, workers=True)
    dm = DataModule()
