"""A DDP + AMP image classifier script with the usual mistakes (and the usual correct code around them)."""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from torchvision import datasets, transforms


class Net(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 32, 3), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.fc(self.drop(self.features(x).flatten(1)))


def evaluate(model, loader, device):
    model.eval()
    correct, seen = 0, 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        logits = model(images)  # expect: TRN102
        correct += (logits.argmax(1) == labels).sum().item()
        seen += labels.numel()
    return correct / seen


def train_one_epoch(model, loader, optimizer, scaler, device, clip):
    model.train()
    total = 0.0
    for images, labels in loader:
        images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(model(images), labels)
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)  # expect: TRN404
        scaler.step(optimizer)
        scaler.update()
        total += loss.item()
    return total / len(loader)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=90)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--clip", type=float, default=1.0)
    args = parser.parse_args()

    dist.init_process_group("nccl")
    rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)

    tf = transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.ToTensor()])
    train_set = datasets.CIFAR10("data", train=True, download=True, transform=tf)
    val_set = datasets.CIFAR10("data", train=False, transform=transforms.ToTensor())
    train_sampler = DistributedSampler(train_set)
    train_loader = DataLoader(train_set, batch_size=128, sampler=train_sampler, num_workers=4, pin_memory=True)
    val_loader = DataLoader(val_set, batch_size=256, sampler=DistributedSampler(val_set, shuffle=False))

    model = DDP(Net().to(device), device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    scaler = torch.amp.GradScaler("cuda")

    for epoch in range(args.epochs):
        loss = train_one_epoch(model, train_loader, optimizer, scaler, device, args.clip)  # expect: TRN203
        scheduler.step()
        acc = evaluate(model, val_loader, device)
        if rank == 0:
            print(f"epoch {epoch}: loss {loss:.3f} acc {acc:.3f}")
            torch.save(model.module.state_dict(), "ckpt.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
