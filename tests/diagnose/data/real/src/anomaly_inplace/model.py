import torch


class Gate(torch.nn.Module):
    def forward(self, x):
        h = torch.sigmoid(x)
        h.mul_(2.0)
        return h
