"""sqrt of a value that reaches 0: its gradient is inf, times a zero weight gives NaN; anomaly mode stops there."""
import torch

torch.autograd.set_detect_anomaly(True)
scale = torch.tensor([0.0, 1.0, 4.0], requires_grad=True)
mask = torch.tensor([0.0, 1.0, 1.0])
for step in range(2):
    loss = (torch.sqrt(scale) * mask).sum()
    loss.backward()
