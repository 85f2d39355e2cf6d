"""DDP through torch.multiprocessing.spawn (gloo); rank 1 fails with a shape mismatch."""
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world_size, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    weights = torch.randn(3, 4)
    if rank == 1:
        weights @ torch.randn(5, 2)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    mp.spawn(worker, args=(2, free), nprocs=2)
