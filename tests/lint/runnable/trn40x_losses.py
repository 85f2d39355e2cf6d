"""Hand-written losses: a focal loss, log of softmax, BCE on a sigmoid."""
import torch
import torch.nn.functional as F


def focal(logits, t):
    p = torch.sigmoid(logits)
    pt = p * t + (1 - p) * (1 - t)
    return -torch.log(pt).mean()  # expect: TRN401


def nll(logits, y):
    return F.nll_loss(torch.log(F.softmax(logits, dim=-1)), y)  # expect: TRN402


def bce(z, y):
    return F.binary_cross_entropy(torch.sigmoid(z), y)  # expect: TRN407


logits = torch.randn(4, 3, requires_grad=True)
y = torch.randint(0, 3, (4,))
z = torch.randn(4, requires_grad=True)
t = torch.randint(0, 2, (4,)).float()
loss = focal(z, t) + nll(logits, y) + bce(z, t)
loss.backward()
print(float(loss))
