"""A trainer class with an AMP switch but no GradScaler."""
import torch
from torch import nn
from torch.cuda.amp import autocast

class Trainer:
    def __init__(self, model, optimizer, use_amp=True):
        self.model = model
        self.optimizer = optimizer
        self.use_amp = use_amp

    def train_epoch(self, loader):
        self.model.train()
        for batch in loader:
            self.optimizer.zero_grad()
            with autocast(enabled=self.use_amp):  # expect: TRN403
                loss = self.model(batch)
            loss.backward()
            self.optimizer.step()
