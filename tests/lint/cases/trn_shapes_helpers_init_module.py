"""The shapes real training code has: objects built at module level, in __init__ or by a
factory; probabilities returned by helpers; losses in dicts handed to a meter; targets
padded by a collate function."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

PAD_ID = 0


def build_discriminator():
    return nn.Sequential(nn.Linear(16, 1), nn.Sigmoid())


def class_probabilities(logits):
    return F.softmax(logits, dim=-1)


disc = build_discriminator()
bce = nn.BCELoss()


class Meter:
    def __init__(self):
        self.total = 0

    def update(self, value):
        self.total += value


def collate(batch):
    tokens = pad_sequence([t for t, _ in batch], batch_first=True, padding_value=PAD_ID)
    labels = pad_sequence([y for _, y in batch], batch_first=True, padding_value=PAD_ID)
    return tokens, labels


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.token_loss = nn.CrossEntropyLoss()  # expect: TRN301
        self.meter = Meter()

    def step(self, batch, real):
        tokens, labels = collate(batch)
        logits = self.model(tokens)
        losses = {
            "tokens": self.token_loss(logits.view(-1, logits.size(-1)), labels.view(-1)),
            "adv": bce(disc(real), torch.ones(real.size(0), 1)),  # expect: TRN407
        }
        loss = sum(losses.values())
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return losses

    def fit(self, loader):
        for batch, real in loader:
            losses = self.step(batch, real)
            for name, value in losses.items():
                self.meter.update(value)  # expect: TRN101


def confidence(model, x):
    return torch.log(class_probabilities(model(x))).max(-1).values  # expect: TRN402
