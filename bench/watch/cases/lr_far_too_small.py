"""The learning rate was meant to be 1e-3 but the config holds 1e-8 (a typo in the exponent):
the loss of this text classifier barely moves over the whole run."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(12)
vocab, length, classes = 500, 24, 3
tokens = torch.randint(0, vocab, (4096, length))
labels = (tokens[:, :4].sum(1) % classes)
loader = DataLoader(TensorDataset(tokens, labels), batch_size=32, shuffle=True)


class BagOfWords(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, 64)
        self.fc = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, classes))

    def forward(self, x):
        return self.fc(self.embed(x))


model = BagOfWords()
config = {"lr": 1e-8, "epochs": 3}
optimizer = torch.optim.Adam(model.parameters(), lr=config["lr"])
criterion = nn.CrossEntropyLoss()
for epoch in range(config["epochs"]):
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch}: loss {total / len(loader):.4f}")
