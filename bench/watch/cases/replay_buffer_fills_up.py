"""DQN-style training from a replay buffer (deque with maxlen): memory grows while the buffer fills
during the first part of the run, then stays flat once it is full. Not a leak."""
import random
from collections import deque

import torch
from torch import nn

torch.manual_seed(24)
random.seed(24)
STATE = 1024
buffer = deque(maxlen=6000)
q_net = nn.Sequential(nn.Linear(STATE, 128), nn.ReLU(), nn.Linear(128, 4))
target_net = nn.Sequential(nn.Linear(STATE, 128), nn.ReLU(), nn.Linear(128, 4))
target_net.load_state_dict(q_net.state_dict())
optimizer = torch.optim.Adam(q_net.parameters(), lr=1e-3)
state = torch.randn(STATE)
for step in range(1400):
    for _ in range(10):  # ten environment steps per update
        action = random.randrange(4)
        next_state = 0.9 * state + 0.1 * torch.randn(STATE)
        reward = float(next_state[action])
        buffer.append((state, action, reward, next_state))
        state = next_state
    if len(buffer) < 256:
        continue
    batch = random.sample(buffer, 64)
    s = torch.stack([b[0] for b in batch])
    a = torch.tensor([b[1] for b in batch])
    r = torch.tensor([b[2] for b in batch])
    s2 = torch.stack([b[3] for b in batch])
    with torch.no_grad():
        target = r + 0.99 * target_net(s2).max(1).values
    q = q_net(s).gather(1, a.unsqueeze(1)).squeeze(1)
    loss = nn.functional.smooth_l1_loss(q, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 100 == 0:
        target_net.load_state_dict(q_net.state_dict())
        print(f"step {step}: loss {loss.item():.4f} buffer {len(buffer)}")
