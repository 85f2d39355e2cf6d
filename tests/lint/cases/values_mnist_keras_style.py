"""A Keras-style MNIST script: the model ends in Softmax and feeds CrossEntropyLoss,
epoch averages mix units. Validation does it right."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=64)
args = parser.parse_args()

transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
train_set = datasets.MNIST("data", train=True, download=True, transform=transform)
val_set = datasets.MNIST("data", train=False, transform=transform)
train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
val_loader = DataLoader(val_set, batch_size=256)

model = nn.Sequential(
    nn.Flatten(),
    nn.Linear(784, 256),
    nn.ReLU(),
    nn.Linear(256, 10),
    nn.Softmax(dim=1),
)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        return self.fc(x.flatten(1))


def validate(net):
    net.eval()
    loss_sum, correct, seen = 0.0, 0, 0
    with torch.no_grad():
        for images, labels in val_loader:
            logits = net(images)
            loss_sum += F.cross_entropy(logits, labels, reduction="sum").item()
            probs = F.softmax(logits, dim=1)  # for reporting only
            correct += (probs.argmax(dim=1) == labels).sum().item()
            seen += labels.size(0)
    net.train()
    return loss_sum / seen, correct / seen


for epoch in range(5):
    running_loss, running_correct = 0.0, 0
    for step, (images, labels) in enumerate(train_loader):
        optimizer.zero_grad()
        outputs = model(images)
        loss = criterion(outputs, labels)  # expect: TRN302
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
        running_correct += (outputs.argmax(1) == labels).sum().item()
        if step % 100 == 99:
            print(f"step {step + 1}: loss {running_loss / (step + 1):.4f}")
    train_loss = running_loss / len(train_loader.dataset)  # expect: TRN304
    train_acc = running_correct / len(train_loader)  # expect: TRN304
    print(epoch, train_loss, train_acc, validate(Head()))
