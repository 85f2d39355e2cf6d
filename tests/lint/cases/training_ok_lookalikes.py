"""Correct training code that looks like the training-structure bugs: gradient
accumulation, accelerate, Lightning, HF Trainer, evaluation in no_grad followed by
train(), samplers that call set_epoch, schedulers stepped per epoch, periodic cache
clearing, teacher models in eval mode."""
import torch
import torch.nn.functional as F
import lightning as L
from accelerate import Accelerator
from torch.utils.data import DataLoader, DistributedSampler
from transformers import Trainer, TrainingArguments


def train_accumulated(model, loader, optimizer, scheduler, accum_steps=8):
    model.train()
    optimizer.zero_grad()
    for step, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x), y) / accum_steps
        loss.backward()
        if (step + 1) % accum_steps == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
        if step % 1000 == 0:
            torch.cuda.empty_cache()


def train_accelerate(model, dataset, epochs):
    accelerator = Accelerator(gradient_accumulation_steps=4, mixed_precision="bf16")
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loader = DataLoader(dataset, batch_size=16, shuffle=True)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for epoch in range(epochs):
        model.train()
        for batch in loader:
            with accelerator.accumulate(model):
                loss = model(**batch).loss
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
        model.eval()
        with torch.no_grad():
            losses = [model(**batch).loss.item() for batch in loader]
        accelerator.print(epoch, sum(losses) / len(losses))


class LitClassifier(L.LightningModule):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.model(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_acc", (self.model(x).argmax(1) == y).float().mean())

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=1e-3)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, 10)]


def hf_finetune(model, train_ds, eval_ds):
    args = TrainingArguments("out", per_device_train_batch_size=8, bf16=True, num_train_epochs=3)
    trainer = Trainer(model=model, args=args, train_dataset=train_ds, eval_dataset=eval_ds)
    trainer.train()
    model.eval()
    return trainer.evaluate()


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
    model.train()
    return correct


def distill(student, teacher, dataset, epochs, rank, world):
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    optimizer = torch.optim.SGD(student.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda")
    teacher.eval()
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        student.train()
        for x, y in loader:
            with torch.no_grad():
                soft = teacher(x).softmax(-1)
            with torch.autocast("cuda", dtype=torch.float16):
                logits = student(x)
                loss = F.kl_div(logits.log_softmax(-1), soft, reduction="batchmean") + F.cross_entropy(logits, y)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(student.parameters(), 5.0)
            scaler.step(optimizer)
            scaler.update()
        print(epoch, evaluate(student, loader))
