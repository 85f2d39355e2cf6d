"""A BiLSTM NER tagger trained with CUDA autocast: padded tags, a masked loss,
an unmasked token accuracy, float16 without a GradScaler; evaluation in
bfloat16 under no_grad is fine."""
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

PAD_TAG = 0


def collate(batch):
    tokens = pad_sequence([torch.tensor(t) for t, _ in batch], batch_first=True)
    tags = pad_sequence([torch.tensor(g) for _, g in batch], batch_first=True, padding_value=PAD_TAG)
    return tokens, tags


class Tagger(nn.Module):
    def __init__(self, vocab_size, num_tags):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, 100, padding_idx=0)
        self.lstm = nn.LSTM(100, 128, batch_first=True, bidirectional=True)
        self.out = nn.Linear(256, num_tags)

    def forward(self, tokens):
        h, _ = self.lstm(self.embed(tokens))
        return self.out(h)


def token_accuracy(logits, tags):
    preds = logits.argmax(-1)
    return (preds == tags).float().mean().item()  # expect: TRN305


def masked_accuracy(logits, tags):
    keep = tags != PAD_TAG
    return ((logits.argmax(-1) == tags) & keep).sum().item() / keep.sum().item()


def train(model, dataset, epochs=3):
    loader = DataLoader(dataset, batch_size=32, shuffle=True, collate_fn=collate)
    criterion = nn.CrossEntropyLoss(ignore_index=PAD_TAG)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        total = 0.0
        for tokens, tags in loader:
            optimizer.zero_grad()
            with torch.autocast("cuda"):  # expect: TRN403
                logits = model(tokens.cuda())
                loss = criterion(logits.transpose(1, 2), tags.cuda())
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(epoch, total / len(loader), token_accuracy(logits, tags.cuda()))


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    accs = []
    for tokens, tags in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tokens.cuda())
        accs.append(masked_accuracy(logits, tags.cuda()))
    model.train()
    return sum(accs) / len(accs)
