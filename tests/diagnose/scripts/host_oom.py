"""Pre-allocating a replay buffer whose size was computed in elements instead of megabytes."""
import torch

capacity = 10**7
buffer = torch.empty((capacity, capacity), dtype=torch.float32)
