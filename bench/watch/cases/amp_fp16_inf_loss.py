"""Mixed precision (float16 autocast with a GradScaler) with a hand-written binary cross-entropy
computed in float16. Confident logits round sigmoid() to exactly 1.0 in float16, log(1 - p) is
-inf for a few samples of every batch, so every scaled gradient is non-finite: the GradScaler skips
every optimizer step and keeps halving its scale. The weights never change."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(21)
X = torch.randn(4096, 16) * 3
y = (X[:, :4].sum(1, keepdim=True) > 0).float()
loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True)

model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
with torch.no_grad():
    model[2].weight.mul_(20)  # "sharper" initial logits, copied from a bigger model's init
optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
scaler = torch.amp.GradScaler("cpu")
for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            p = torch.sigmoid(model(xb).half())
            loss = -(yb.half() * torch.log(p) + (1 - yb.half()) * torch.log(1 - p)).mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    print(f"epoch {epoch}: loss {loss.item():.4g} scale {scaler.get_scale():.3g}")
