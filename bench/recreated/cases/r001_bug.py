import torch
import torch.nn as nn
import torch.nn.functional as F

MASTER_CONFIG = {
    'vocab_size': 65,
    'batch_size': 8,
    'context_window': 16,
    'd_model': 128,
}


def get_batches(data, split, batch_size, context_window):
    ix = torch.randint(0, data.size(0) - context_window - 1, (batch_size,))
    x = torch.stack([data[i:i + context_window] for i in ix]).long()
    y = torch.stack([data[i + 1:i + context_window + 1] for i in ix]).long()
    return x, y


class SimpleBrokenModel(nn.Module):
    def __init__(self, config=MASTER_CONFIG):
        super().__init__()
        self.config = config

        self.embedding = nn.Embedding(config['vocab_size'], config['d_model'])
        self.linear = nn.Sequential(
            nn.Linear(config['d_model'], config['d_model']),
            nn.ReLU(),
            nn.Linear(config['d_model'], config['vocab_size']),
        )

        print("model params:", sum([m.numel() for m in self.parameters()]))

    def forward(self, idx, targets=None):
        x = self.embedding(idx)
        a = self.linear(x)
        logits = F.softmax(a, dim=-1)

        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, self.config['vocab_size']), targets.view(-1))
            return logits, loss

        else:
            return logits


dataset = torch.randint(0, MASTER_CONFIG['vocab_size'], (10000,))
model = SimpleBrokenModel(MASTER_CONFIG)
xs, ys = get_batches(dataset, 'train', MASTER_CONFIG['batch_size'], MASTER_CONFIG['context_window'])

logits, loss = model(xs, ys)
optimizer = torch.optim.Adam(model.parameters())
for epoch in range(100):
    optimizer.zero_grad()
    xs, ys = get_batches(dataset, 'train', MASTER_CONFIG['batch_size'], MASTER_CONFIG['context_window'])
    logits, loss = model(xs, ys)
    loss.backward()
    optimizer.step()
