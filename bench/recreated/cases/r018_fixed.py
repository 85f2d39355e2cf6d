import time

import torch
import tqdm
from accelerate import Accelerator
from transformers import AutoModelForCausalLM, get_linear_schedule_with_warmup


def training_function(kwargs: dict):
    config = kwargs["config"]
    train_dataloader = kwargs["train_dataloader"]
    batch_size = config["batch_size"]
    train_ds_len = config["train_ds_len"]
    num_epochs = config["num_epochs"]

    accelerator = Accelerator(gradient_accumulation_steps=config["gradient_accumulation_steps"])
    model = AutoModelForCausalLM.from_pretrained(config["model_name"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=config["lr"])
    lr_scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=100,
                                                   num_training_steps=num_epochs * train_ds_len // batch_size)
    model, optimizer, train_dataloader, lr_scheduler = accelerator.prepare(
        model, optimizer, train_dataloader, lr_scheduler)

    for epoch in range(num_epochs):
        fwd_time_sum, bwd_time_sum, optim_step_time_sum = 0, 0, 0
        s_epoch = time.time()
        model.train()
        loss_sum = torch.tensor(0.0).to(accelerator.device)
        for step, batch in tqdm.tqdm(enumerate(train_dataloader), total=train_ds_len // batch_size + 1):
            # We could avoid this by setting device_placement=True
            batch = {k: v.to(accelerator.device) for k, v in batch.items()}
            with accelerator.accumulate(model):
                s_fwd = time.time()
                outputs = model(**batch)
                loss = outputs.loss
                loss_sum += loss.item()
                e_fwd = time.time()
                fwd_time_sum += e_fwd - s_fwd
                s_bwd = time.time()
                accelerator.backward(loss)
                e_bwd = time.time()
                bwd_time_sum += e_bwd - s_bwd

                s_opt_step = time.time()
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()
                e_opt_step = time.time()
                optim_step_time_sum += e_opt_step - s_opt_step

            if accelerator.is_main_process:
                accelerator.print(
                    f"[epoch {epoch} step {step}] loss: {loss.item()} step-time: {e_opt_step - s_fwd}")

        e_epoch = time.time()
        accelerator.print("Train time per epoch: ", e_epoch - s_epoch)
        loss_mean = loss_sum / (step + 1)
        accelerator.print(f"epoch {epoch} mean loss: {loss_mean.item()}")
