"""A kNN monitor keeps a bank of detached embeddings of the samples seen this epoch and clears it
at the end of each epoch (after computing a nearest-neighbour accuracy). Memory rises within an
epoch and drops back: nothing is leaking."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(22)
n, d = 6400, 32
labels = torch.randint(0, 8, (n,))
X = torch.randn(8, d)[labels] + torch.randn(n, d)
loader = DataLoader(TensorDataset(X, labels), batch_size=64, shuffle=True)

encoder = nn.Sequential(nn.Linear(d, 256), nn.ReLU(), nn.Linear(256, 1024))
head = nn.Linear(1024, 8)
optimizer = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()), lr=1e-3)
criterion = nn.CrossEntropyLoss()
for epoch in range(4):
    bank, bank_labels = [], []
    for xb, yb in loader:
        feats = encoder(xb)
        loss = criterion(head(feats), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        bank.append(feats.detach().clone())
        bank_labels.append(yb)
    feats = torch.cat(bank)
    near = (feats[:500] @ feats.t()).topk(2, dim=1).indices[:, 1]
    knn_acc = (torch.cat(bank_labels)[near] == torch.cat(bank_labels)[:500]).float().mean().item()
    bank.clear()
    bank_labels.clear()
    del feats
    print(f"epoch {epoch}: loss {loss.item():.4f} knn acc {knn_acc:.3f}")
