"""Mixed precision with a loss that turns -inf after 30 good steps (the log of a value that becomes 0,
whose gradient is 0 * inf = NaN):
GradScaler skips every optimizer step from then on and halves its scale, and nothing crashes."""
import torch
import torch.nn.functional as F

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu")
x = torch.randn(4096, 20)
y = (x[:, 0] > 0).long()
for step, i in enumerate(range(0, 4096, 32)):
    optimizer.zero_grad()
    out = model(x[i:i + 32])
    weight = 0.0 if step >= 30 else 1.0  # e.g. a mask that empties
    loss = F.cross_entropy(out, y[i:i + 32]) + 1e-3 * torch.log(out.abs().mean() * weight)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
