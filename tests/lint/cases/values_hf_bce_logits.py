"""An HF regression-style head (num_labels=1) trained with BCELoss on outputs.logits;
evaluation counts correct samples and divides by the number of batches."""
import torch
import torch.nn as nn
from transformers import AutoModelForSequenceClassification

model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=1)
loss_fct = nn.BCELoss()

def train_step(batch, optimizer):
    outputs = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    logits = outputs.logits.squeeze(-1)
    loss = loss_fct(logits, batch["labels"].float())  # expect: TRN303
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()

def eval_loop(loader):
    model.eval()
    total_correct = 0
    n_batches = 0
    for batch in loader:
        with torch.no_grad():
            logits = model(**batch).logits
        preds = (torch.sigmoid(logits) > 0.5).long().squeeze(-1)
        total_correct += (preds == batch["labels"]).sum().item()
        n_batches += 1
    model.train()
    return total_correct / n_batches  # expect: TRN304
