"""In-place change of a tensor autograd saved, inside a model's forward in another file
(inplace_model.py): the failing stack (train_step, backward) does not show it."""
import torch

from inplace_model import Gate


def train_step(model, batch):
    out = model(batch)
    loss = out.sum()
    loss.backward()


torch.manual_seed(0)
train_step(Gate(), torch.randn(4, 3))
