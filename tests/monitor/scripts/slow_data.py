"""The dataset sleeps in __getitem__: the loop waits for data most of the time."""
import time

import torch
from torch.utils.data import DataLoader, Dataset


class SlowDataset(Dataset):
    def __len__(self):
        return 96

    def __getitem__(self, index):
        time.sleep(0.002)
        return torch.randn(8), torch.randn(1)


torch.manual_seed(0)
loader = DataLoader(SlowDataset(), batch_size=8, num_workers=0)
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in loader:
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
print("done")
