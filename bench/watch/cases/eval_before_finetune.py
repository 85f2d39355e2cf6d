"""Fine-tuning a checkpoint: the script first evaluates the loaded model (model.eval()), then
fine-tunes it on new data without calling model.train(): the BatchNorm layers keep using the
old running statistics and dropout stays off for the whole fine-tuning."""
import os
import tempfile

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(8)


def make_model():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.3), nn.Linear(32, 3))


checkpoint = os.path.join(tempfile.mkdtemp(), "pretrained.pt")
torch.save(make_model().state_dict(), checkpoint)  # stands in for the downloaded weights

model = make_model()
model.load_state_dict(torch.load(checkpoint))
images = torch.randn(1200, 3, 16, 16)
labels = (images[:, 0].mean((1, 2)) > images[:, 1].mean((1, 2))).long() + (images[:, 2].mean((1, 2)) > 0).long()
loader = DataLoader(TensorDataset(images, labels), batch_size=24, shuffle=True)

model.eval()
with torch.no_grad():
    acc = sum((model(x).argmax(1) == y).sum().item() for x, y in loader) / len(images)
print(f"accuracy before fine-tuning: {acc:.3f}")

optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()
for epoch in range(4):
    for i, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
