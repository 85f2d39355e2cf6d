"""Fails uncaught; the atexit handler then prints state the probes could have touched.

traindoctor probes the failing frame before the process goes on to exit; the
lines printed at exit must be exactly what plain python prints: the probes
changed no tensor, drew no random number and printed nothing.
"""
import atexit

import torch

torch.manual_seed(0)
weights = torch.randn(4, 4, requires_grad=True)
data = torch.randn(4)
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)


@atexit.register
def report():
    print("next random:", torch.rand(3).tolist())
    print("versions:", weights._version, data._version, model.weight._version)
    print("grad mode:", torch.is_grad_enabled(), "weights grad:", weights.grad)


def step():
    scaled = data * 2
    return weights @ torch.ones(5) + scaled


step()
