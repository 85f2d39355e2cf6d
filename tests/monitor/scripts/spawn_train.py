"""A 2-process DDP run started with torch.multiprocessing.spawn (gloo, CPU), reading a fixed data set through a
DataLoader with a DistributedSampler.

    python spawn_train.py MODE [STEPS]

MODE: healthy | nan (rank 1's batch is NaN at step 6) | hang (rank 0 alone calls all_reduce at step 4 while
rank 1 waits in a barrier). STEPS defaults to 10."""

import gc
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def train(rank: int, world: int, mode: str, steps: int, port: str) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(9)
    inputs = torch.randn(320, 8, generator=generator)
    data = TensorDataset(inputs, inputs @ torch.randn(8, 1, generator=generator))
    sampler = DistributedSampler(data, num_replicas=world, rank=rank)
    loader = DataLoader(data, batch_size=16, sampler=sampler)
    step = 0
    for epoch in range(1000):
        sampler.set_epoch(epoch)
        for x, y in loader:
            step += 1
            if mode == "nan" and rank == 1 and step == 6:
                x = x * float("nan")
            loss = F.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if mode == "hang" and step == 4:  # rank 0 alone logs through all_reduce; rank 1 waits at a barrier
                if rank == 0:
                    dist.all_reduce(loss.detach().clone())
                else:
                    dist.barrier()
            if step >= steps:
                break
        if step >= steps:
            break
    # torch 2.13's gloo aborts one rank ("terminate called without an active exception", SIGABRT) in about one
    # run of four in nan mode when a rank tears the group down while its peer is still in the last step's
    # all-reduce; a barrier orders the teardown (0 of 16 runs aborted with it, 3 of 12 without). The DDP
    # wrapper goes first: a reducer that outlives the group aborted 4 of 11 torchrun runs of ddp_train.py.
    del model, optimizer
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    mode = sys.argv[1] if len(sys.argv) > 1 else "healthy"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    mp.spawn(train, args=(2, mode, steps, port), nprocs=2)
    print("spawned run done", flush=True)
