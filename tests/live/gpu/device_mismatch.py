"""CPU/CUDA device mismatch: the model on the GPU, the batch left on the CPU."""
import torch

torch.manual_seed(0)
model = torch.nn.Linear(16, 4).to("cuda")
inputs = torch.randn(8, 16)
outputs = model(inputs)
