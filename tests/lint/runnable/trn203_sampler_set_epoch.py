"""A shuffling DistributedSampler iterated for several epochs without set_epoch
(TRN203): every epoch has the same order. The fix calls `sampler.set_epoch(epoch)`.
Prints ORDERS SAME/DIFFER."""
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dataset = TensorDataset(torch.arange(32).float())
sampler = DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True, seed=0)
loader = DataLoader(dataset, batch_size=4, sampler=sampler)
orders = []
for epoch in range(3):
    seen = []
    for (x,) in loader:  # expect: TRN203
        seen += x.tolist()
    orders.append(seen)
print("ORDERS", "SAME" if all(o == orders[0] for o in orders) else "DIFFER")
