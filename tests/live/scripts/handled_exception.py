"""A user function raises into the stdlib, which handles it; training goes on.

debugpy stops there (userUnhandled) and traindoctor probes the frame; the
output below must be exactly what plain python prints: the probes changed no
tensor, drew no random number and printed nothing.
"""
from concurrent.futures import ThreadPoolExecutor

import torch

torch.manual_seed(0)
weights = torch.randn(4, requires_grad=True)
data = torch.randn(4)


def flaky_step():
    scaled = data * 2
    raise ValueError("handled by the executor")


with ThreadPoolExecutor(1) as pool:
    error = pool.submit(flaky_step).exception()
print("handled:", error)
print("next random:", torch.rand(3).tolist())
print("versions:", weights._version, data._version, data.tolist())
