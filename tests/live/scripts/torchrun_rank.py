"""Two ranks (gloo); rank 1 fails with a shape mismatch after the first all_reduce."""
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    grads = torch.ones(4) * rank
    dist.all_reduce(grads)
    if rank == 1:
        features = torch.randn(3, 4)
        projection = torch.randn(5, 2)
        features @ projection
    dist.barrier()
    dist.destroy_process_group()


main()
