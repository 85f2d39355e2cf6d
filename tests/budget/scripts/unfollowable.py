"""A GPU training script with what a fake step cannot follow: a custom op with no fake kernel (as a
CUDA extension would be), a data-dependent shape (a boolean mask), `.item()`-driven control flow, and
a checkpoint loaded from disk.

    python unfollowable.py CHECKPOINT.pt   (a state dict of nn.Linear(256, 512))
"""

import sys

import torch
import torch.nn as nn


@torch.library.custom_op("traindoctor_test::fused_gelu", mutates_args=())
def fused_gelu(x: torch.Tensor) -> torch.Tensor:  # stands for a CUDA kernel with no meta/fake kernel
    return torch.nn.functional.gelu(x)


fused_gelu.register_autograd(lambda ctx, grad: grad * 1.0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(256, 512), nn.Linear(512, 10)

    def forward(self, x):
        h = fused_gelu(self.fc1(x))
        kept = h[h.sum(dim=1) > 0]  # rows selected by value: the shape depends on the data
        return self.fc2(kept), kept.shape[0]


device = torch.device("cuda")
model = Net().to(device)
model.fc1.load_state_dict(torch.load(sys.argv[1], map_location=device))  # written by the test
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for step in range(10):
    x = torch.randn(64, 256, device=device)
    y = torch.randint(0, 10, (64,), device=device)
    logits, rows = model(x)
    loss = nn.functional.cross_entropy(logits, y[:rows])
    if loss.item() > 100:  # control flow driven by a value
        continue
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
