"""A GAN whose generator loss goes NaN at a known iteration (a log of 0 in its loss), while the
discriminator, which steps first each iteration, is still finite at that iteration."""
import sys

import torch

torch.manual_seed(0)
iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 30
nan_at = int(sys.argv[2]) if len(sys.argv) > 2 else 12


class Generator(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8))

    def forward(self, z):
        return self.net(z)


class Discriminator(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))

    def forward(self, x):
        return torch.sigmoid(self.net(x))


generator, discriminator = Generator(), Discriminator()
opt_d = torch.optim.Adam(discriminator.parameters(), lr=1e-3)
opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3)
real = torch.randn(32, 8) + 2
for iteration in range(1, iterations + 1):
    fake = generator(torch.randn(32, 4))
    opt_d.zero_grad()
    loss_d = -(torch.log(discriminator(real)).mean() + torch.log(1 - discriminator(fake.detach())).mean())
    loss_d.backward()
    opt_d.step()
    opt_g.zero_grad()
    scores = discriminator(fake)
    if iteration == nan_at:
        scores = scores * 0  # the discriminator is certain: log(0)
    loss_g = -torch.log(scores).mean()
    loss_g.backward()
    opt_g.step()
    print(f"iteration {iteration} loss_d {loss_d.item():.4f} loss_g {loss_g.item():.4f}")
