import torch
import torch.nn as nn
from torch.utils.data import DataLoader


class Tokenizer:
    token_end_id = 100007
    vocab_size = 100008


tokenizer = Tokenizer()


class AquilaConfig:
    vocab_size = tokenizer.vocab_size
    dim = 64
    ignore_index = -100


class AquilaModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.tok_embeddings = nn.Embedding(config.vocab_size, config.dim)
        self.output = nn.Linear(config.dim, config.vocab_size, bias=False)
        self.loss_func = nn.CrossEntropyLoss(ignore_index=self.config.ignore_index)

    def forward(self, input_ids, labels=None):
        h = self.tok_embeddings(input_ids)
        logits = self.output(h)
        shift_logits = logits[..., :-1, :].contiguous()
        shift_labels = labels[..., 1:].contiguous()
        loss = self.loss_func(
            shift_logits.view(-1, self.config.vocab_size), shift_labels.view(-1).long()).mean()
        return {"logits": logits, "loss": loss}


def padding(indice, max_length, pad_idx=tokenizer.token_end_id):
    pad_indice = [item + [pad_idx] * max(0, max_length - len(item)) for item in indice]
    return torch.tensor(pad_indice)


def collate_fn(batch):
    input_ids = [data["input_ids"] for data in batch]
    max_length = max([len(t) for t in input_ids])
    labels = padding(input_ids, max_length, pad_idx=-100)[:, :max_length]
    input_ids = padding(input_ids, max_length)[:, :max_length]
    data = {
        "input_ids": input_ids,
        "labels": labels,
    }
    return data


train_dataset = [{"input_ids": list(range(5, 5 + n))} for n in (7, 12, 9, 3)]
loader = DataLoader(train_dataset, batch_size=2, collate_fn=collate_fn)
model = AquilaModel(AquilaConfig())
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
for epoch in range(2):
    for batch in loader:
        optimizer.zero_grad()
        loss = model(**batch)["loss"]
        loss.backward()
        optimizer.step()
