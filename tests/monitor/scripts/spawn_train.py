"""A 2-process DDP run started with torch.multiprocessing.spawn (gloo, CPU); rank 1's batch is NaN at step 6
with `nan`; rank 0 alone calls all_reduce at step 4 while rank 1 waits in a barrier with `hang`; else healthy."""

import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def train(rank: int, world: int, mode: str, port: str) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(rank)
    target = torch.randn(8, 1, generator=torch.Generator().manual_seed(9))
    for step in range(1, 11):
        x = torch.randn(16, 8, generator=generator)
        if mode == "nan" and rank == 1 and step == 6:
            x = x * float("nan")
        loss = F.mse_loss(model(x), x @ target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if mode == "hang" and step == 4:  # rank 0 alone logs through all_reduce; rank 1 waits at a barrier
            if rank == 0:
                dist.all_reduce(loss.detach().clone())
            else:
                dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    mp.spawn(train, args=(2, sys.argv[1] if len(sys.argv) > 1 else "healthy", port), nprocs=2)
    print("spawned run done", flush=True)
