"""Mixed precision (float16 autocast with a GradScaler) on a regression whose targets are in the
thousands: the squared error overflows float16 in the loss, every scaled gradient is inf, and the
GradScaler skips every optimizer step while halving its scale. The weights never change."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(21)
X = torch.randn(4096, 16)
y = X @ torch.randn(16, 1) * 800 + 3000  # energy in kWh
loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True)

model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
scaler = torch.amp.GradScaler("cpu")
for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            pred = model(xb)
            loss = ((pred - yb.half()) ** 2).mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    print(f"epoch {epoch}: loss {loss.item():.4g} scale {scaler.get_scale():.3g}")
