import torch
import torch.nn as nn
import torch.nn.functional as F


class SingleEmbedder(nn.Module):
    def __init__(self, args, vectors):
        super(SingleEmbedder, self).__init__()
        self.args = args
        self.emb = nn.Embedding.from_pretrained(vectors, freeze=True)
        self.proj = nn.Linear(vectors.size(1), args.emb_dim)

    def forward(self, words):
        return self.proj(self.emb(words))


class DME(nn.Module):
    def __init__(self, args, embeddings):
        super(DME, self).__init__()
        self.args = args
        self.embedders = nn.ModuleList([SingleEmbedder(args, vectors) for vectors in embeddings])
        if args.attnnet != 'none':
            self.attn = nn.Linear(args.emb_dim, 1)

    def forward(self, words):
        projected = [embedder(words) for embedder in self.embedders]
        projected = torch.stack(projected, dim=2)  # b x s x n x d
        if self.args.attnnet == 'none':
            out = projected.sum(2)
        else:
            attn = F.softmax(self.attn(projected), dim=2)
            out = (attn * projected).sum(2)
        out = F.dropout(out, p=self.args.emb_dropout, training=self.training)
        return out


class SentClassifier(nn.Module):
    def __init__(self, args, embeddings, n_classes):
        super(SentClassifier, self).__init__()
        self.embedder = DME(args, embeddings)
        self.rnn = nn.LSTM(args.emb_dim, args.rnn_dim, batch_first=True, bidirectional=True)
        self.mlp = nn.Sequential(nn.Linear(4 * args.rnn_dim, args.fc_dim), nn.ReLU(), nn.Dropout(args.dropout),
                                 nn.Linear(args.fc_dim, n_classes))

    def forward(self, words):
        embedded = self.embedder(words)
        hidden, _ = self.rnn(embedded)
        pooled = torch.cat([hidden.max(1)[0], hidden.mean(1)], dim=1)
        return self.mlp(pooled)


def train_epoch(model, loader, optimizer, criterion, device):
    model.train()
    for words, labels in loader:
        words, labels = words.to(device), labels.to(device)
        optimizer.zero_grad()
        loss = criterion(model(words), labels)
        loss.backward()
        optimizer.step()


def evaluate(model, loader, device):
    model.eval()
    correct, total = 0, 0
    with torch.no_grad():
        for words, labels in loader:
            words, labels = words.to(device), labels.to(device)
            pred = model(words).argmax(1)
            correct += (pred == labels).sum().item()
            total += labels.size(0)
    return correct / total
