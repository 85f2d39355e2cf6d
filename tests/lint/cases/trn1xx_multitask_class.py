"""A trainer class with a dict of losses, a meter, and per-step loss sums that are fine."""
import torch
import torch.nn as nn


class AverageMeter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, value, n=1):
        self.sum += value * n
        self.count += n


class MultiTaskTrainer:
    def __init__(self, model, heads, optimizer):
        self.model = model
        self.heads = heads
        self.optimizer = optimizer
        self.criterion = nn.CrossEntropyLoss()
        self.loss_meter = AverageMeter()
        self.history = {"cls": 0.0, "aux": 0.0}

    def compute_losses(self, batch):
        features = self.model(batch["x"])
        return {
            "cls": self.criterion(self.heads["cls"](features), batch["y"]),
            "aux": self.criterion(self.heads["aux"](features), batch["aux"]),
        }

    def train_epoch(self, loader):
        for batch in loader:
            losses = self.compute_losses(batch)
            loss = 0
            for name in losses:
                loss += losses[name]
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.loss_meter.update(loss)  # expect: TRN101
            for name, value in losses.items():
                self.history[name] += value  # expect: TRN101

    def train_epoch_fixed(self, loader):
        for batch in loader:
            losses = self.compute_losses(batch)
            loss = sum(losses.values())
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.loss_meter.update(loss.item(), n=len(batch["y"]))
            for name, value in losses.items():
                self.history[name] += value.item()
