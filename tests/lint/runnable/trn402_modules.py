"""Probabilities from modules: a Sequential ending in Sigmoid feeding BCELoss, a
discriminator whose forward returns a sigmoid, a softmax returned by a helper."""
import torch
import torch.nn as nn


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 1)

    def forward(self, x):
        return torch.sigmoid(self.net(x))


def class_probabilities(logits):
    return torch.softmax(logits, dim=-1)


classifier = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())
criterion = nn.BCELoss()
D = Discriminator()
x, fake = torch.randn(3, 4), torch.randn(3, 4)
y = torch.ones(3, 1)
loss = criterion(classifier(x), y)  # expect: TRN407
g_loss = -torch.log(1 - D(fake)).mean()  # expect: TRN402
confidence = torch.log(class_probabilities(torch.randn(3, 5))).max(-1)  # expect: TRN402
print(float(loss), float(g_loss))
