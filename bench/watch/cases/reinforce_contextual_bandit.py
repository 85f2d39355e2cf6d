"""REINFORCE with a running-mean baseline on a contextual bandit (16 contexts, 4 arms, noisy
rewards). The loss, -log pi(a|s) * (r - baseline), is not a quantity that falls: it is centred
near zero, changes sign from batch to batch, and its scale follows the advantages and the policy's
confidence. A correct run: the mean reward rises towards the best arm's."""
import torch
from torch import nn

torch.manual_seed(3)
contexts, arms, batch = 16, 4, 32
features = torch.randn(contexts, 12)
means = torch.randn(contexts, arms)  # expected reward of each arm in each context
policy = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, arms))
optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)
baseline = 0.0
for step in range(1500):
    ctx = torch.randint(0, contexts, (batch,))
    dist = torch.distributions.Categorical(logits=policy(features[ctx]))
    action = dist.sample()
    reward = means[ctx, action] + 0.5 * torch.randn(batch)
    advantage = reward - baseline
    loss = -(dist.log_prob(action) * advantage).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    baseline = 0.95 * baseline + 0.05 * reward.mean().item()
    if step % 150 == 0:
        best = means[ctx].max(1).values.mean().item()
        print(f"step {step}: loss {loss.item():+.4f} reward {reward.mean().item():.3f} (best {best:.3f})")
