"""Loops that reset their gradients in the usual ways (argv[1] picks one): none carries a gradient
from one optimizer step to the next."""
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(0)
variant = sys.argv[1]
G = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8))
D = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt_g = torch.optim.SGD(G.parameters(), lr=0.01)
opt_d = torch.optim.SGD(D.parameters(), lr=0.01)
real = torch.randn(512, 8) + 2
noise = torch.randn(512, 8)
for i in range(0, 512, 16):
    z, r = noise[i:i + 16], real[i:i + 16]
    if variant == "zero-not-none":
        opt_g.zero_grad(set_to_none=False)
        F.mse_loss(G(z), r).backward()
        opt_g.step()
    elif variant == "accumulate-4":
        (F.mse_loss(G(z), r) / 4).backward()
        if (i // 16) % 4 == 3:
            opt_g.step()
            opt_g.zero_grad()
    elif variant == "gan":  # D's gradients also receive G's loss before D zeroes them
        opt_d.zero_grad()
        d_loss = F.binary_cross_entropy_with_logits(D(r), torch.ones(16, 1)) + \
            F.binary_cross_entropy_with_logits(D(G(z).detach()), torch.zeros(16, 1))
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        F.binary_cross_entropy_with_logits(D(G(z)), torch.ones(16, 1)).backward()
        opt_g.step()
    elif variant == "grad-none-by-hand":
        for p in G.parameters():
            p.grad = None
        F.mse_loss(G(z), r).backward()
        torch.nn.utils.clip_grad_norm_(G.parameters(), 1.0)
        opt_g.step()
