"""Code written for torch < 2.0 that imports the removed torch._six."""
import torch
from torch._six import inf

print(torch.tensor([inf]))
