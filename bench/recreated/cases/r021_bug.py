import torch
from torch.cuda.amp import GradScaler, autocast


def compute_loss(params, model, batch, graph_compiler, is_training):
    feature = batch["inputs"].to(params.device)
    supervisions = batch["supervisions"]
    with torch.set_grad_enabled(is_training):
        nnet_output, encoder_memory, memory_mask = model(feature, supervisions)
        loss = graph_compiler.ctc_loss(nnet_output, supervisions)
    return loss, {"loss": loss.detach().cpu().item()}


def train_one_epoch(params, model, optimizer, scheduler, graph_compiler, train_dl, scaler: GradScaler):
    model.train()
    tot_loss = 0.0
    for batch_idx, batch in enumerate(train_dl):
        params.batch_idx_train += 1
        batch_size = len(batch["supervisions"]["text"])

        with autocast(enabled=params.use_fp16):
            loss, loss_info = compute_loss(
                params=params,
                model=model,
                batch=batch,
                graph_compiler=graph_compiler,
                is_training=True,
            )
        tot_loss += loss_info["loss"]

        scaler.scale(loss).backward()

        grad_norm = torch.nn.utils.clip_grad_norm_(
            model.parameters(),
            max_norm=1.0  # Common value for Conformers
        )

        scheduler.step_batch(params.batch_idx_train)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()

        if batch_idx % params.log_interval == 0:
            print(f"batch {batch_idx}, batch size {batch_size}, loss {loss_info['loss']:.4f}, "
                  f"grad_norm {grad_norm:.3f}")
    return tot_loss
