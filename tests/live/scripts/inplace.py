"""In-place modification of a tensor autograd saved for the backward pass."""
import torch


def forward(inputs, weight):
    hidden = inputs @ weight
    gate = torch.sigmoid(hidden)  # sigmoid saves its output for backward
    gate.add_(1.0)  # ...which this in-place add changes
    return gate.sum()


torch.manual_seed(0)
inputs = torch.randn(10, 5)
weight = torch.randn(5, 5, requires_grad=True)
loss = forward(inputs, weight)
loss.backward()
