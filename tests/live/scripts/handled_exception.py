"""A user function raises into the stdlib, which handles it; training goes on."""
from concurrent.futures import ThreadPoolExecutor

import torch

torch.manual_seed(0)
data = torch.randn(4)


def flaky_step():
    scaled = data * 2
    raise ValueError(f"handled by the executor ({scaled.shape})")


for _ in range(20):
    with ThreadPoolExecutor(1) as pool:
        error = pool.submit(flaky_step).exception()
print("handled:", error)
