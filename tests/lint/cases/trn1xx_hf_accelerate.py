"""Hugging Face + accelerate style loop: detached totals are fine, a list of raw losses is not."""
import torch
from accelerate import Accelerator
from transformers import AutoModelForSequenceClassification


def main(args, train_dataloader, eval_dataloader):
    accelerator = Accelerator()
    model = AutoModelForSequenceClassification.from_pretrained(args.model_name)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, train_dataloader)
    step_losses = []
    for epoch in range(args.epochs):
        model.train()
        total_loss = 0
        for step, batch in enumerate(train_dataloader):
            outputs = model(**batch)
            loss = outputs.loss
            loss = loss / args.gradient_accumulation_steps
            total_loss += loss.detach().float()
            accelerator.backward(loss)
            step_losses.append(outputs.loss)  # expect: TRN101
            if step % args.gradient_accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
        model.eval()
        for batch in eval_dataloader:
            with torch.no_grad():
                outputs = model(**batch)
            predictions = outputs.logits.argmax(dim=-1)
    return step_losses
