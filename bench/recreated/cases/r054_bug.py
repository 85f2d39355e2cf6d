import torch
from torch import nn
from tqdm.auto import tqdm


class Trainer:
    def __init__(self, model, args, train_dataloader, optimizer, lr_scheduler):
        self.model = model
        self.args = args
        self.train_dataloader = train_dataloader
        self.optimizer = optimizer
        self.lr_scheduler = lr_scheduler
        self.global_step = 0

    def train(self):
        model = self.model
        tr_loss = torch.tensor(0.0).to(self.args.device)
        logging_loss_scalar = 0.0
        model.zero_grad()
        for epoch in range(int(self.args.num_train_epochs)):
            epoch_iterator = tqdm(self.train_dataloader, desc="Iteration")
            for step, inputs in enumerate(epoch_iterator):
                tr_loss += self.training_step(model, inputs)
                if (step + 1) % self.args.gradient_accumulation_steps == 0:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), self.args.max_grad_norm)
                    self.optimizer.step()
                    self.lr_scheduler.step()
                    model.zero_grad()
                    self.global_step += 1
                    if self.global_step % self.args.logging_steps == 0:
                        tr_loss_scalar = tr_loss.item()
                        print({"loss": (tr_loss_scalar - logging_loss_scalar) / self.args.logging_steps})
                        logging_loss_scalar = tr_loss_scalar
        return self.global_step, tr_loss.item() / self.global_step

    def training_step(self, model: nn.Module, inputs) -> torch.Tensor:
        model.train()
        inputs = {k: v.to(self.args.device) for k, v in inputs.items()}
        outputs = model(**inputs)
        loss = outputs[0]
        if self.args.gradient_accumulation_steps > 1:
            loss = loss / self.args.gradient_accumulation_steps
        loss.backward()
        return loss
