"""A causal LM fine-tuning step the way the HF docs write it: padding in the
labels replaced with -100, so the default ignore_index skips it."""

import torch
import torch.nn.functional as F


def training_step(model, tokenizer, texts, optimizer):
    enc = tokenizer(texts, padding="longest", truncation=True, return_tensors="pt")
    labels = enc["input_ids"].clone()
    labels[labels == tokenizer.pad_token_id] = -100
    logits = model(**enc).logits
    shift_logits = logits[:, :-1].contiguous()
    shift_labels = labels[:, 1:].contiguous()
    loss = F.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
    loss.backward()
    optimizer.step()
    return loss.item()


def token_classification_loss(logits, labels, attention_mask, num_labels):
    # the BERT token-classification recipe: only active positions count
    active = attention_mask.view(-1) == 1
    active_logits = logits.view(-1, num_labels)[active]
    active_labels = labels.view(-1)[active]
    return F.cross_entropy(active_logits, active_labels)


class MaskedLMHead(torch.nn.Module):
    def __init__(self, pad_id):
        super().__init__()
        self.pad_id = pad_id
        self.loss = torch.nn.CrossEntropyLoss(reduction="none")

    def forward(self, logits, targets):
        per_token = self.loss(logits.transpose(1, 2), targets)
        mask = (targets != self.pad_id).float()
        return (per_token * mask).sum() / mask.sum().clamp_min(1)
