"""Targets padded by the collate function with 0, scored without ignore_index."""
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence

PAD = 0
criterion = nn.CrossEntropyLoss()  # expect: TRN301


def collate(batch):
    tokens = pad_sequence([t for t, _ in batch], batch_first=True, padding_value=PAD)
    labels = pad_sequence([y for _, y in batch], batch_first=True, padding_value=PAD)
    return tokens, labels


def step(model, batch):
    tokens, labels = collate(batch)
    logits = model(tokens)
    return criterion(logits.view(-1, logits.size(-1)), labels.view(-1))


model = nn.Sequential(nn.Embedding(10, 6), nn.Linear(6, 10))
batch = [(torch.randint(1, 10, (n,)), torch.randint(1, 10, (n,))) for n in (3, 5)]
print(step(model, batch).item())
