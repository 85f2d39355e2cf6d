"""A tiny sequence tagger trained on padded batches, with padding counted in the loss.

Runs on CPU in a few seconds on synthetic data:  python examples/train_tagger.py
`traindoctor check examples/` finds:
  - TRN301: targets are padded with 0 by pad_sequence, but CrossEntropyLoss ignores -100:
    every pad position counts as a "class 0" target, so the loss and accuracy are wrong;
  - TRN402: log(softmax(x)) instead of log_softmax (underflows to -inf, NaN gradients).
"""

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence

VOCAB, TAGS, PAD = 100, 5, 0


def make_batch(batch_size=16):
    lengths = torch.randint(3, 12, (batch_size,))
    tokens = [torch.randint(1, VOCAB, (int(n),)) for n in lengths]
    tags = [t % TAGS for t in tokens]
    return pad_sequence(tokens, batch_first=True), pad_sequence(tags, batch_first=True)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32, padding_idx=PAD)
        self.rnn = nn.GRU(32, 32, batch_first=True)
        self.out = nn.Linear(32, TAGS)
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, tokens):
        hidden, _ = self.rnn(self.embed(tokens))
        return self.out(hidden)

    def loss(self, tokens, tags):
        logits = self.forward(tokens)
        return self.criterion(logits.view(-1, TAGS), tags.view(-1))

    def confidence(self, tokens):
        return torch.log(torch.softmax(self.forward(tokens), dim=-1)).max(dim=-1).values


def main(steps=50):
    torch.manual_seed(0)
    model = Tagger()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(steps):
        tokens, tags = make_batch()
        loss = model.loss(tokens, tags)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    with torch.no_grad():
        print("mean log-confidence", model.confidence(make_batch()[0]).mean().item())


if __name__ == "__main__":
    main()
