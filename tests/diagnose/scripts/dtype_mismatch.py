"""Features built in float64 (as numpy would give them) meet a float32 model inside a matmul."""
import torch
from torch import nn

model = nn.Linear(4, 1)
features = torch.rand(16, 4, dtype=torch.float64)
for step in range(3):
    pred = model(features)
    pred.sum().backward()
