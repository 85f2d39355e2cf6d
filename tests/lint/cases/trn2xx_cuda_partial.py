"""Seeds numpy, random and only the current GPU; model init on CPU stays unseeded."""
import random

import numpy as np
import torch
import torch.nn as nn


def setup(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.cuda.manual_seed(seed)  # expect: TRN202


def main():
    setup(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1)).to(device)
    x = torch.randn(4, 8, device=device)
    print(model(x).sum().item(), np.random.rand())
