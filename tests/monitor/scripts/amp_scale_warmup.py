"""Mixed precision whose first steps overflow at GradScaler's initial scale (65536), as fp16 runs
do: the scaler skips them and halves the scale until the gradients fit, then every step applies."""
import torch
import torch.nn.functional as F

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu")
x = torch.randn(4096, 20)
y = (x[:, 0] > 0).long()
for i in range(0, 4096, 32):
    optimizer.zero_grad()
    with torch.autocast("cpu", dtype=torch.float16):
        # x 100, then x 65536 by the scaler: the float16 activation gradients pass 65504 and overflow
        loss = F.cross_entropy(model(x[i:i + 32]), y[i:i + 32]) * 100
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
