import torch
import torch.nn as nn
import torch.nn.functional as F


class EventModel(nn.Module):
    def __init__(self, n_features, n_hidden, n_time_bins):
        super().__init__()
        self.rnn = nn.GRU(n_features, n_hidden, batch_first=True)
        self.time_head = nn.Linear(n_hidden, n_time_bins)

    def forward(self, x):
        h, _ = self.rnn(x)
        time_pred = self.time_head(h[:, -1])
        return time_pred


class Worker:
    def __init__(self, model, optimizer, device):
        self.model = model.to(device)
        self.optimizer = optimizer
        self.device = device

    def train(self, train_loader, plot_lr=False, on_iter=None):
        self.model.train()
        for i, (x, time_hist) in enumerate(train_loader):
            x, time_hist = x.to(self.device), time_hist.to(self.device)
            time_pred = self.model(x)
            time_loss = F.binary_cross_entropy_with_logits(time_pred, time_hist.float())
            self.optimizer.zero_grad()
            time_loss.backward()
            self.optimizer.step()
            if on_iter is not None:
                on_iter(i, time_loss.item())
