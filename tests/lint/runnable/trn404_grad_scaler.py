"""A GradScaler used without scaler.step/update and with clipping on scaled gradients
(TRN404); the fixes route the step through the scaler, add update() and unscale_()."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
data = [(torch.randn(4, 8), torch.randint(0, 2, (4,))) for _ in range(5)]


def train_clipped(opt):
    for x, y in data:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: TRN404
        scaler.step(opt)
        scaler.update()


def train_direct():
    for x, y in data:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        optimizer.step()  # expect: TRN404
    return model.weight.abs().max().item()


train_clipped(optimizer)
print(f"{train_direct():.3f}")
