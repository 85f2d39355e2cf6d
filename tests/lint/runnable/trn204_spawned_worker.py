"""A parent that seeds and a worker started by torch.multiprocessing.spawn that
does not (TRN204); the fix seeds the worker with the parent's seed argument."""
import argparse

import torch
import torch.multiprocessing as mp


def worker(rank, args, results):  # expect: TRN204
    results.put((rank, torch.rand(1).item()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args([])
    torch.manual_seed(args.seed)
    results = mp.get_context("spawn").SimpleQueue()
    mp.spawn(worker, args=(args, results), nprocs=1)
    print(results.get())


if __name__ == "__main__":
    main()
