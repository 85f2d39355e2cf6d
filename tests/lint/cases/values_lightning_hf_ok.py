"""Look-alikes the value rules must leave alone: a LightningModule trained with
precision="16-mixed", an HF token-classification compute_metrics that masks -100,
an accelerate fp16 loop, logits reported through a separate softmax, and epoch
averages in consistent units."""
import lightning as L
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from transformers import AutoModelForTokenClassification, DataCollatorForTokenClassification, Trainer


class LitClassifier(L.LightningModule):
    def __init__(self, num_classes=10):
        super().__init__()
        self.backbone = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU())
        self.head = nn.Linear(128, num_classes)
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, x):
        return self.head(self.backbone(x))

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = self.criterion(logits, y)
        probs = logits.softmax(dim=-1)
        self.log("train_acc", (probs.argmax(-1) == y).float().mean())
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        with torch.autocast("cuda", dtype=torch.float16):
            logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    predictions = np.argmax(logits, axis=-1)
    mask = labels != -100
    return {"accuracy": float((predictions[mask] == labels[mask]).mean())}


def hf_train(train_ds, eval_ds, tokenizer, args):
    model = AutoModelForTokenClassification.from_pretrained("bert-base-cased", num_labels=9)
    collator = DataCollatorForTokenClassification(tokenizer)
    trainer = Trainer(model=model, args=args, train_dataset=train_ds, eval_dataset=eval_ds,
                      data_collator=collator, compute_metrics=compute_metrics)
    trainer.train()


def accelerate_train(model, loader, optimizer):
    accelerator = Accelerator(mixed_precision="fp16")
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    total, seen = 0.0, 0
    for x, y in loader:
        with torch.autocast("cuda"):
            logits = model(x)
            loss = F.cross_entropy(logits, y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        total += loss.item() * y.size(0)
        seen += y.size(0)
    return total / seen


if __name__ == "__main__":
    trainer = L.Trainer(precision="16-mixed", max_epochs=3)
    trainer.fit(LitClassifier())
