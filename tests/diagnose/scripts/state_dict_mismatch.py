"""Loading a checkpoint saved from a wider model and with a renamed layer."""
import sys
import tempfile

import torch
from torch import nn

saved = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 3))
path = tempfile.mktemp(suffix=".pt")
torch.save(saved.state_dict(), path)

model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3), nn.Softmax(dim=-1))
model.load_state_dict(torch.load(path))
