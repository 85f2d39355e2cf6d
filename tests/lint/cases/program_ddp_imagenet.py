"""ImageNet-style DDP script in the shape of the official examples: the parent seeds,
mp.spawn starts main_worker which never does; non_blocking copies from loaders that
do not pin memory; anomaly detection left on from a NaN hunt; a model whose head
uses functional dropout without training=self.training."""
import argparse
import os
import random

import numpy as np
import torch
import torch.backends.cudnn as cudnn
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, DistributedSampler

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=None)
parser.add_argument("--epochs", type=int, default=90)
parser.add_argument("--debug-anomaly", action="store_true")

torch.autograd.set_detect_anomaly(True)  # expect: TRN501


class Head(nn.Module):
    def __init__(self, dim, classes, p=0.2):
        super().__init__()
        self.p = p
        self.fc = nn.Linear(dim, classes)

    def forward(self, x):
        return self.fc(F.dropout(x, self.p))  # expect: TRN704


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList([nn.Conv2d(3, 64, 7), nn.Conv2d(64, 128, 3)])
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = Head(128, 1000)

    def forward(self, x):
        for stage in self.stages:
            x = F.relu(stage(x))
        return self.head(self.pool(x).flatten(1))


def main():
    args = parser.parse_args()
    if args.seed is not None:
        random.seed(args.seed)
        torch.manual_seed(args.seed)
        cudnn.deterministic = True  # the official example asks for repeatable kernels when seeded
    if args.debug_anomaly:
        torch.autograd.set_detect_anomaly(True)
    ngpus = torch.cuda.device_count()
    mp.spawn(main_worker, nprocs=ngpus, args=(ngpus, args))


def main_worker(gpu, ngpus, args):  # expect: TRN204
    dist.init_process_group("nccl", rank=gpu, world_size=ngpus)
    cudnn.benchmark = True  # expect: TRN205
    model = nn.parallel.DistributedDataParallel(Backbone().cuda(gpu), device_ids=[gpu])
    criterion = nn.CrossEntropyLoss().cuda(gpu)
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9)
    train_set, val_set = build_datasets(args)
    sampler = DistributedSampler(train_set)
    train_loader = DataLoader(train_set, batch_size=256, sampler=sampler, num_workers=8)
    val_loader = DataLoader(val_set, batch_size=256, num_workers=8, pin_memory=True)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        for i, (images, target) in enumerate(train_loader):
            images = images.cuda(gpu, non_blocking=True)  # expect: TRN502
            target = target.cuda(gpu, non_blocking=True)  # expect: TRN502
            loss = criterion(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        validate(val_loader, model, criterion, gpu)


def validate(val_loader, model, criterion, gpu):
    model.eval()
    with torch.no_grad():
        for images, target in val_loader:
            images = images.cuda(gpu, non_blocking=True)
            target = target.cuda(gpu, non_blocking=True)
            loss = criterion(model(images), target)
    return loss


def build_datasets(args):
    raise NotImplementedError(np.__name__ + os.sep)


if __name__ == "__main__":
    main()
