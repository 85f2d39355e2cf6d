"""Program-level rules, each fixed: no_grad used without the call (TRN601),
functional dropout always on (TRN704), modules in a plain list (TRN705), a
whole module saved and reloaded under weights_only (TRN602), non_blocking
copies from an unpinned loader (TRN502), anomaly detection left on (TRN501), cuDNN autotuning in a seeded
program that asks for deterministic kernels (TRN205, strict)."""
import os
import pickle
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = True  # expect: TRN205
torch.autograd.set_detect_anomaly(True)  # expect: TRN501


class Net(nn.Module):
    def __init__(self, depth=2):
        super().__init__()
        self.inp = nn.Linear(4, 8)
        self.hidden = [nn.Linear(8, 8) for _ in range(depth)]  # expect: TRN705
        self.out = nn.Linear(8, 2)

    def forward(self, x):
        x = F.relu(self.inp(x))
        for layer in self.hidden:
            x = F.relu(layer(x))
        x = F.dropout(x, p=0.5)  # expect: TRN704
        return self.out(x)


def evaluate(model, x):
    model.eval()
    try:
        with torch.no_grad:  # expect: TRN601
            return model(x)
    except TypeError:  # the unfixed script: a class is not a context manager
        return None
    finally:
        model.train()


dataset = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
loader = DataLoader(dataset, batch_size=8, shuffle=True)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for inputs, targets in loader:
    inputs = inputs.to("cpu", non_blocking=True)  # expect: TRN502
    loss = F.cross_entropy(model(inputs), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

x = torch.randn(5, 4)
first, second = evaluate(model, x), evaluate(model, x)
if first is not None:  # fixed: dropout is off in eval mode, so predictions are repeatable
    assert torch.equal(first, second)
    assert len(list(model.parameters())) == 8  # the hidden layers are registered

path = os.path.join(tempfile.mkdtemp(), "net.pt")
torch.save(model, path)
try:
    restored = torch.load(path)  # expect: TRN602
    assert isinstance(restored, Net)
except pickle.UnpicklingError:  # the unfixed script on torch >= 2.6
    restored = None
print("ok", float(loss))
