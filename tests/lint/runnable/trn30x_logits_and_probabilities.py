"""Losses fed the wrong kind of value: softmax outputs to cross_entropy, sigmoid
outputs to BCE-with-logits, logits to BCE. The unsafe fixes pass the logits and
switch BCE to its with-logits form; both versions run."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        with torch.no_grad():  # outputs in [0, 1] so that the unfixed BCE runs on this tiny input
            self.fc.weight.zero_()
            self.fc.bias.fill_(0.5)

    def forward(self, x):
        return self.fc(x)


classifier = nn.Linear(4, 3)
scorer = Scorer()
x, labels, flags = torch.randn(5, 4), torch.randint(0, 3, (5,)), torch.rand(5, 1).round()
ce = F.cross_entropy(F.softmax(classifier(x), dim=-1), labels)  # expect: TRN302
bce_logits = nn.BCEWithLogitsLoss()(torch.sigmoid(scorer(x)), flags)  # expect: TRN302
bce = F.binary_cross_entropy(scorer(x), flags)  # expect: TRN303
(ce + bce_logits + bce).backward()
print(float(ce), float(bce_logits), float(bce))
