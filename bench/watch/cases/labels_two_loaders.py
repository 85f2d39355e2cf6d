"""Images and labels come from two DataLoaders, both with shuffle=True, zipped together: each
loader draws its own permutation, so images and labels no longer match."""
import torch
from torch import nn
from torch.utils.data import DataLoader

torch.manual_seed(16)
n, classes = 4800, 3
labels = torch.randint(0, classes, (n,))
images = torch.randn(n, 1, 12, 12)
images[:, 0, :4] += labels.view(-1, 1, 1).float()  # the class is visible in the top rows

image_loader = DataLoader(images, batch_size=32, shuffle=True)
label_loader = DataLoader(labels, batch_size=32, shuffle=True)
model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 10 * 10, classes))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
criterion = nn.CrossEntropyLoss()
for epoch in range(2):
    for x, y in zip(image_loader, label_loader):
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
