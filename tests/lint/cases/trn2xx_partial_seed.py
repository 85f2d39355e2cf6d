"""Seeds torch only; negative sampling uses numpy and the file list uses random."""
import random

import numpy as np
import torch
from torch import nn


def sample_negatives(num_items, k):
    return np.random.choice(num_items, size=k, replace=False)


def train(args):
    torch.manual_seed(args.seed)  # expect: TRN202
    files = [f"shard-{i}.pt" for i in range(8)]
    random.shuffle(files)
    model = nn.Embedding(100, 16)
    loader = torch.utils.data.DataLoader(files, batch_size=2, num_workers=0)
    for batch in loader:
        negatives = torch.as_tensor(sample_negatives(100, 5))
        loss = model(negatives).pow(2).mean()
        loss.backward()
