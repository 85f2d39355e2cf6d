"""Binary classification: a scorer ending in a Linear layer, trained with BCELoss
in one trainer and BCEWithLogitsLoss in another; a discriminator whose forward
returns a sigmoid is fine with BCELoss."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Scorer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(dim, 64), nn.ReLU())
        self.out = nn.Linear(64, 1)

    def forward(self, x):
        h = self.body(x)
        return self.out(h).squeeze(-1)


class Discriminator(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1), nn.Sigmoid())

    def forward(self, x):
        return self.net(x)


class Trainer:
    def __init__(self, dim):
        self.model = Scorer(dim)
        self.criterion = nn.BCELoss()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def step(self, x, y):
        self.optimizer.zero_grad()
        loss = self.criterion(self.model(x), y)  # expect: TRN303
        loss.backward()
        self.optimizer.step()
        return loss.item()


class LogitTrainer:
    def __init__(self, dim):
        self.model = Scorer(dim)
        self.criterion = nn.BCEWithLogitsLoss()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def step(self, x, y):
        self.optimizer.zero_grad()
        logits = self.model(x)
        loss = self.criterion(logits, y)
        loss.backward()
        self.optimizer.step()
        preds = (torch.sigmoid(logits) > 0.5).float()
        return loss.item(), (preds == y).float().mean().item()


def gan_step(netD, real, fake, optD):
    d = Discriminator(real.size(1))
    loss_real = F.binary_cross_entropy(d(real), torch.ones(real.size(0), 1))  # expect: TRN407
    loss_fake = F.binary_cross_entropy(d(fake.detach()), torch.zeros(fake.size(0), 1))  # expect: TRN407
    loss = loss_real + loss_fake
    optD.zero_grad()
    loss.backward()
    optD.step()
    return F.binary_cross_entropy_with_logits(torch.sigmoid(netD(fake)), torch.ones(fake.size(0), 1))  # expect: TRN302
