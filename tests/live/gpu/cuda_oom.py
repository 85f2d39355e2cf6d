"""CUDA OOM: a model and Adam state, then activations far beyond the GPU's memory."""
import torch

torch.manual_seed(0)
device = torch.device("cuda")
model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
loss = model(torch.randn(64, 4096, device=device)).square().mean()
loss.backward()
optimizer.step()

total = torch.cuda.get_device_properties(device).total_memory
rows = int(total // (4096 * 4)) * 2  # twice the whole GPU in one activation
activations = model(torch.randn(rows, 4096, device=device))
