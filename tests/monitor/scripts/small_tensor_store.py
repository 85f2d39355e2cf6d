"""Many small tensors stored every step, the way a DQN's replay buffer stores its states (8 KB,
ten environment steps per update), in a plain list that is never trimmed: a real leak, in blocks
small enough that glibc's heaps serve them."""
import random

import torch
from torch import nn

torch.manual_seed(24)
random.seed(24)
STATE = 2048
buffer = []
q_net = nn.Sequential(nn.Linear(STATE, 64), nn.ReLU(), nn.Linear(64, 4))
optimizer = torch.optim.Adam(q_net.parameters(), lr=1e-4)
state = torch.randn(STATE)
for step in range(1400):
    for _ in range(10):
        action = random.randrange(4)
        next_state = 0.9 * state + 0.1 * torch.randn(STATE)
        buffer.append((state, action, float(next_state[action]), next_state))
        state = next_state
    batch = random.sample(buffer, 64) if len(buffer) >= 64 else list(buffer)
    s = torch.stack([b[0] for b in batch])
    a = torch.tensor([b[1] for b in batch])
    r = torch.tensor([b[2] for b in batch])
    q = q_net(s).gather(1, a.unsqueeze(1)).squeeze(1)
    loss = nn.functional.mse_loss(q, r)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("done", len(buffer))
