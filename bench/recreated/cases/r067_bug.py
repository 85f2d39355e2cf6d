import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


class GaussianActorNet(nn.Module):
    def __init__(self, state_dim, action_dim, hidden_size=64, gpu=False):
        super(GaussianActorNet, self).__init__()
        self.fc1 = nn.Linear(state_dim, hidden_size)
        self.fc2 = nn.Linear(hidden_size, hidden_size)
        self.fc_mean = nn.Linear(hidden_size, action_dim)
        self.fc_std = nn.Linear(hidden_size, action_dim)
        self.gpu = gpu

    def to_torch_variable(self, x):
        if isinstance(x, Variable):
            return x
        x = torch.from_numpy(np.asarray(x, dtype=np.float32))
        if self.gpu:
            x = x.cuda()
        return Variable(x)

    def forward(self, x):
        x = self.to_torch_variable(x)
        phi = F.tanh(self.fc1(x))
        phi = F.tanh(self.fc2(phi))
        mean = self.fc_mean(phi)
        std = F.softplus(self.fc_std(phi) + 1e-5)
        return mean, std

    def log_density(self, x, mean, std):
        var = std.pow(2)
        log_density = -(x - mean).pow(2) / (2 * var) - 0.5 * np.log(2 * np.pi) - torch.log(std)
        return log_density.sum(1)

    def entropy(self, std):
        return 0.5 * (1 + (2 * np.pi * std.pow(2)).log()).sum(1)


def update(network, optimizer, states, actions, advantages, entropy_weight=0.01):
    mean, std = network(states)
    actions = network.to_torch_variable(actions)
    advantages = network.to_torch_variable(advantages)
    log_prob = network.log_density(actions, mean, std)
    loss = -(log_prob * advantages).mean() - entropy_weight * network.entropy(std).mean()
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm(network.parameters(), 40)
    optimizer.step()
    return loss.data.numpy()
