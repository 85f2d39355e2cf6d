"""Center-loss style training: the class centers are a running average of the batch features,
kept on the model between steps. The loss uses `centers.detach()`, so backward never complains,
but the stored centers are computed from this step's features without detaching them: each
step's forward graph stays linked to the next one for the whole run."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(5)
n, d, classes = 6144, 48, 6
labels = torch.randint(0, classes, (n,))
X = torch.randn(classes, d)[labels] + 0.8 * torch.randn(n, d)
loader = DataLoader(TensorDataset(X, labels), batch_size=32, shuffle=True)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d, 256), nn.ReLU(), nn.Linear(256, 64))
        self.head = nn.Linear(64, classes)
        self.centers = torch.zeros(classes, 64)

    def forward(self, x, y):
        feats = self.body(x)
        one_hot = nn.functional.one_hot(y, classes).float()
        batch_centers = one_hot.t() @ feats / one_hot.sum(0).clamp(min=1).unsqueeze(1)
        self.centers = 0.9 * self.centers + 0.1 * batch_centers
        center_loss = ((feats - self.centers.detach()[y]) ** 2).sum(1).mean()
        return self.head(feats), center_loss


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
criterion = nn.CrossEntropyLoss()
for epoch in range(2):
    for i, (xb, yb) in enumerate(loader):
        logits, center_loss = model(xb, yb)
        loss = criterion(logits, yb) + 0.01 * center_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if i % 50 == 0:
            print(f"epoch {epoch} step {i}: loss {loss.item():.4f}")
