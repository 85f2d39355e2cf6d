"""A real 2-rank DDP training run (gloo, CPU) with one planted distributed failure.

    torchrun --nproc-per-node 2 ddp_train.py MODE [STEPS] [cpu|cuda]

MODE: healthy | hang (rank 0 alone logs through all_reduce at step 4) | nan (rank 1's batch is
NaN at step 6) | desync (rank 1 perturbs a weight outside DDP at step 4, with its own seed) |
straggler (rank 1's loader sleeps on every batch) | hang-sleep (rank 0 alone logs through
all_reduce at step 4 while rank 1 is stuck in a long sleep) | same-data (no DistributedSampler) |
slow-compute (rank 1's forward takes 50 ms longer) | slow-eval (a 12 s evaluation at step 4) |
unseeded (the loader adds noise from Python's `random`, which nothing seeds: no two runs match). On cuda: NCCL, one GPU per rank.
"""

import gc
import os
import random
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

mode = sys.argv[1] if len(sys.argv) > 1 else "healthy"
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
cuda = len(sys.argv) > 3 and sys.argv[3] == "cuda"

dist.init_process_group("nccl" if cuda else "gloo")
rank = dist.get_rank()
device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
if cuda:
    torch.cuda.set_device(device)
torch.manual_seed(0)
class SlowOnRank1(nn.Module):
    """An activation that costs rank 1 50 ms per forward (`slow-compute`): a slower device, say."""

    def forward(self, x):
        if mode == "slow-compute" and rank == 1:
            time.sleep(0.05)
        return torch.relu(x)


model = nn.Sequential(nn.Linear(16, 32), SlowOnRank1(), nn.Linear(32, 1)).to(device)
ddp = DistributedDataParallel(model, device_ids=[device.index] if cuda else None)
generator = torch.Generator().manual_seed(1)
inputs = torch.randn(1024, 16, generator=generator)
data = TensorDataset(inputs, inputs @ torch.randn(16, 1, generator=generator))  # learnable: a linear target


def collate(batch):
    if mode == "straggler" and rank == 1:
        time.sleep(0.05)  # a slow loader on rank 1 only
    x, y = torch.utils.data.default_collate(batch)
    if mode == "unseeded":
        x = x + random.random()  # "augmentation" from an unseeded generator
    return x, y


sampler = DistributedSampler(data)
loader = DataLoader(data, batch_size=16, sampler=sampler, collate_fn=collate)
if mode == "same-data":  # no DistributedSampler: every rank reads the whole set in the same order
    loader = DataLoader(data, batch_size=16, collate_fn=collate)
optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
step = 0
for epoch in range(1000):
    sampler.set_epoch(epoch)
    for x, y in loader:
        step += 1
        x, y = x.to(device), y.to(device)
        if mode == "nan" and rank == dist.get_world_size() - 1 and step == 6:
            x = x * float("nan")
        loss = F.mse_loss(ddp(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if mode in ("hang", "hang-sleep") and rank == 0 and step == 4:
            dist.all_reduce(loss.detach().clone())  # logging a global loss, on rank 0 only
        if mode == "hang" and rank == 1 and step == 4:
            dist.barrier()  # the other ranks wait here for rank 0, which is in its all_reduce
        if mode == "hang-sleep" and rank == 1 and step == 4:
            time.sleep(3600)  # stuck in something slow: never reaches rank 0's all_reduce
        if mode == "slow-eval" and step == 4:  # a 12 s evaluation: no step, no collective, not a hang
            with torch.no_grad():
                end = time.monotonic() + 12
                while time.monotonic() < end:
                    model(x)
        if mode == "desync" and rank == 1 and step == 4:
            torch.manual_seed(100 + rank)  # a rank-dependent seed for a "weight noise" trick
            with torch.no_grad():
                model[2].weight.add_(1e-3 * torch.randn_like(model[2].weight))
        if step >= steps:
            break
    if step >= steps:
        break
# torch 2.13's gloo aborts a rank at exit ("terminate called without an active exception", SIGABRT) when the
# DDP wrapper (its reducer) outlives the group: 4 of 11 plain torchrun runs under a 2-core load did, 0 of 20 with
# the wrapper collected first. The barrier orders the teardown (as in spawn_train.py).
del ddp
gc.collect()
dist.barrier()
dist.destroy_process_group()
print(f"rank {rank} done after {step} steps", flush=True)
