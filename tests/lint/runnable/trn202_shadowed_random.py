"""Seeds torch only; shuffles with `random` imported as a function (the fix must not shadow it)."""
import argparse
from random import random

import torch


def main(args):
    torch.manual_seed(args.seed)  # expect: TRN202
    import random as rnd
    items = list(range(10))
    rnd.shuffle(items)
    print(items, random() < 2)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    main(parser.parse_args([]))
