import torch


def train(model, optimizer, lr_scheduler, dataloader, config, scaler):
    grad_accum_steps = config.training.grad_accum_steps
    grad_clip_norm = config.training.grad_clip_norm
    allowed_gradnorm_factor = config.training.allowed_gradnorm_factor
    fwdbwd_pass_step = 0
    param_update_step = 0
    for epoch in range(config.training.num_epochs):
        for batch in dataloader:
            with torch.autocast(device_type="cuda", enabled=config.training.use_amp):
                ret_dict = model(batch)
            loss = ret_dict["loss"] / grad_accum_steps
            scaler.scale(loss).backward()
            fwdbwd_pass_step += 1

            if fwdbwd_pass_step % grad_accum_steps == 0:
                scaler.unscale_(optimizer)
                total_grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=grad_clip_norm).item()
                skip_optimizer_step = total_grad_norm > grad_clip_norm * allowed_gradnorm_factor
                if total_grad_norm > grad_clip_norm:
                    print(f"WARNING: step {fwdbwd_pass_step} grad norm too large {total_grad_norm} > {grad_clip_norm}")
                if not skip_optimizer_step:
                    scaler.step(optimizer)
                    scaler.update()
                    param_update_step += 1
                    lr_scheduler.step()
                else:
                    print(f"WARNING: step {fwdbwd_pass_step} grad norm too large, skipping optimizer step")
                optimizer.zero_grad(set_to_none=True)
    return param_update_step
