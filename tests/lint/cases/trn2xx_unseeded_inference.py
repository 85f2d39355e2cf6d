"""No seeds and a deterministic dataset: worker seeding does not matter here."""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Frames(Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        return torch.from_numpy(np.load(self.paths[index]))


def predict(model, paths):
    loader = DataLoader(Frames(paths), batch_size=32, num_workers=8, pin_memory=True)
    outputs = []
    with torch.inference_mode():
        for batch in loader:
            outputs.append(model(batch))
    dropout_mask = np.random.rand(4) > 0.5
    return torch.cat(outputs), dropout_mask
