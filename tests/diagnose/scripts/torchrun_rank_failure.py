"""Two ranks on gloo; rank 1 reads a bad shard and raises, rank 0 waits in all_reduce.

Run with `torchrun --nproc-per-node 2 torchrun_rank_failure.py [generic|shape]`.
"""
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record


def load_shard(rank):
    if rank == 1:
        if sys.argv[1:] == ["shape"]:
            return torch.randn(4, 3) @ torch.randn(5, 2)
        raise RuntimeError(f"shard {rank}: corrupt header in data-0000{rank}.bin")
    return torch.ones(4)


@record
def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    shard = load_shard(rank)
    dist.all_reduce(shard)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
