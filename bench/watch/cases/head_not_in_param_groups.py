"""The optimizer is built from per-module parameter groups (a lower learning rate for the
embedding, a higher one for the encoder) and the output layer's group was left out of the list:
the classifier gets a gradient every step but keeps its random initial weights for the whole run,
while the layers below it train to fit a random projection."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(17)
vocab, length, classes = 500, 24, 5
tokens = torch.randint(0, vocab, (6000, length))
topic = torch.randint(0, classes, (vocab,))  # each word leans towards one class
y = torch.mode(topic[tokens], dim=1).values
loader = DataLoader(TensorDataset(tokens, y), batch_size=64, shuffle=True)


class BagClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, 64, mode="mean")
        self.encoder = nn.Sequential(nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 8), nn.Tanh())
        self.fc = nn.Linear(8, classes)

    def forward(self, x):
        return self.fc(self.encoder(self.embed(x)))


model = BagClassifier()
optimizer = torch.optim.Adam([
    {"params": model.embed.parameters(), "lr": 5e-3},
    {"params": model.encoder.parameters(), "lr": 1e-3},
])  # model.fc is in no group
criterion = nn.CrossEntropyLoss()
for epoch in range(5):
    correct = 0
    for xb, yb in loader:
        out = model(xb)
        loss = criterion(out, yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        correct += (out.argmax(1) == yb).sum().item()
    print(f"epoch {epoch}: loss {loss.item():.4f} acc {correct / len(tokens):.3f}")
