"""Host allocation failure: a buffer far larger than any machine's RAM."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
loss = model(torch.randn(32, 256)).square().mean()
loss.backward()
optimizer.step()  # Adam's state now holds two tensors per parameter

batch = 1 << 20
activations = torch.empty(batch, 1 << 30)  # 4 PiB of float32
