"""Sentence classification with a padded tokenizer batch: the labels are class
ids, not padded sequences, so cross entropy needs no ignore_index."""

import torch
import torch.nn as nn


class SentimentTrainer:
    def __init__(self, model, tokenizer):
        self.model = model
        self.tokenizer = tokenizer
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)

    def step(self, texts, labels):
        batch = self.tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
        logits = self.model(**batch).logits
        loss = self.criterion(logits, labels)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        return loss.item()


def segmentation_loss(net, images, masks):
    # ignore_index=255 marks unlabeled pixels; no token padding here
    criterion = nn.CrossEntropyLoss(ignore_index=255)
    return criterion(net(images), masks)
