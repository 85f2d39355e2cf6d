"""Parameters the loss uses that no optimizer holds, and the runs where that is by design.

    plain-list   hidden layers kept in a Python list: unregistered, in no optimizer
    group        a registered output layer left out of hand-built parameter groups
    two-models   a GAN-like pair, each model with its own optimizer; the generator's loss reaches
                 the critic's parameters, which the other optimizer holds (not reported)
    adversarial  the input is given requires_grad for an adversarial perturbation: a tensor in no
                 optimizer, but no parameter (not reported)
"""
import sys

import torch
from torch import nn

torch.manual_seed(0)
variant = sys.argv[1]
X = torch.randn(512, 8)
y = (X[:, 0] + X[:, 1] > 0).long()


class Net(nn.Module):
    def __init__(self, plain_list: bool):
        super().__init__()
        hidden = [nn.Linear(8, 32), nn.Linear(32, 32)]
        if plain_list:
            self.hidden = hidden
        else:
            self.hidden = nn.ModuleList(hidden)
        self.out = nn.Linear(32, 2)

    def forward(self, x):
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.out(x)


criterion = nn.CrossEntropyLoss()
if variant in ("plain-list", "group", "adversarial"):
    model = Net(plain_list=variant == "plain-list")
    if variant == "group":
        optimizer = torch.optim.Adam([{"params": model.hidden.parameters()}], lr=1e-3)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(60):
        xb, yb = X[step % 8 * 64:][:64], y[step % 8 * 64:][:64]
        if variant == "adversarial":  # one backward gives the weights' and the input's gradients
            xb = xb.clone().requires_grad_(True)
        loss = criterion(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if variant == "adversarial":  # then a step on the perturbed batch (FGSM)
            adversarial = (xb + 0.05 * xb.grad.sign()).detach()
            optimizer.zero_grad()
            criterion(model(adversarial), yb).backward()
            optimizer.step()
elif variant == "two-models":
    generator = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 8))
    critic = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    g_opt = torch.optim.Adam(generator.parameters(), lr=1e-3)
    c_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)
    bce = nn.BCEWithLogitsLoss()
    for step in range(60):
        fake = generator(torch.randn(64, 4))
        g_loss = bce(critic(fake), torch.ones(64, 1))  # reaches the critic's parameters too
        g_opt.zero_grad()
        g_loss.backward()
        g_opt.step()
        real = X[step % 8 * 64:][:64]
        c_loss = bce(critic(real), torch.ones(64, 1)) + bce(critic(fake.detach()), torch.zeros(64, 1))
        c_opt.zero_grad()
        c_loss.backward()
        c_opt.step()
print("done")
