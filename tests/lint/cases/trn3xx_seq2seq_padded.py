"""A GRU translation model trained on padded batches (bentrevett-style), with
the padding counted in the loss."""

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

SRC_VOCAB, TRG_VOCAB, HIDDEN = 50, 60, 32


def collate(batch):
    src = pad_sequence([s for s, _ in batch], batch_first=True)
    trg = pad_sequence([t for _, t in batch], batch_first=True)  # padded with 0
    return src, trg


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(SRC_VOCAB, HIDDEN)
        self.rnn = nn.GRU(HIDDEN, HIDDEN, batch_first=True)
        self.out = nn.Linear(HIDDEN, TRG_VOCAB)

    def forward(self, src):
        hidden, _ = self.rnn(self.emb(src))
        return self.out(hidden)


criterion = nn.CrossEntropyLoss()  # expect: TRN301


def train(model, loader, optimizer):
    model.train()
    for src, trg in loader:
        optimizer.zero_grad()
        output = model(src)[:, : trg.size(1)]
        output_dim = output.shape[-1]
        output = output.reshape(-1, output_dim)
        loss = criterion(output, trg[:, : output.size(0)].reshape(-1))
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    data = [(torch.randint(1, SRC_VOCAB, (n,)), torch.randint(1, TRG_VOCAB, (n,))) for n in range(3, 9)]
    model = Seq2Seq()
    train(model, DataLoader(data, batch_size=3, collate_fn=collate), torch.optim.Adam(model.parameters()))
