"""A multi-GPU training script as torchrun would start it: NCCL process group, one GPU per rank, the
model wrapped in DistributedDataParallel or sharded with FSDP2's fully_shard.

    torchrun --nproc-per-node 8 train_distributed.py --strategy ddp|fsdp2 [--batch 8]
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from train_model import GPT

parser = argparse.ArgumentParser()
parser.add_argument("--strategy", choices=("ddp", "fsdp2"), default="ddp")
parser.add_argument("--batch", type=int, default=8)
args = parser.parse_args()

dist.init_process_group("nccl")
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
device = torch.device("cuda", local_rank)
model = GPT(vocab=4096, d=512, layers=4, heads=8).to(device)
if args.strategy == "ddp":
    model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
else:
    from torch.distributed.fsdp import fully_shard

    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
tokens = torch.randint(0, 4096, (64, 129))
dataset = TensorDataset(tokens[:, :-1], tokens[:, 1:])
loader = DataLoader(dataset, batch_size=args.batch, sampler=DistributedSampler(dataset))
for epoch in range(10):
    loader.sampler.set_epoch(epoch)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if dist.get_rank() == 0:
            print(f"loss {loss.item():.3f}")
dist.destroy_process_group()
