import time
from pathlib import Path

import numpy as np
import torch
import tqdm

from pyg.logger import _logger
from pyg.mlpf import MLPF
from pyg.utils import unpack_predictions, unpack_target
from utils import mlpf_loss, save_checkpoint


def train_and_valid(rank, world_size, outdir, model, optimizer, data_loader, is_train=True, lr_schedule=None,
                    epoch=None, dtype=torch.float32):
    """
    Performs training over a given epoch. Will run a validation step every N_STEPS and after the last training batch.
    """

    train_or_valid = "train" if is_train else "valid"
    _logger.info(f"Initiating epoch #{epoch} {train_or_valid} run on device rank={rank}")

    # this one will keep accumulating `train_loss` and then return the average
    epoch_loss = {}

    if is_train:
        model.train()
    else:
        model.eval()

    iterator = enumerate(data_loader)
    if (world_size > 1) and (rank == 0):
        iterator = tqdm.tqdm(enumerate(data_loader), total=len(data_loader))

    device_type = "cuda" if isinstance(rank, int) else "cpu"

    loss_accum = 0.0
    for itrain, batch in iterator:
        batch = batch.to(rank, non_blocking=True)

        ygen = unpack_target(batch.ygen)

        with torch.autocast(device_type=device_type, dtype=dtype, enabled=device_type == "cuda"):
            ypred = model(batch.X, batch.mask)
        ypred = unpack_predictions(ypred)

        with torch.autocast(device_type=device_type, dtype=dtype, enabled=device_type == "cuda"):
            if is_train:
                loss = mlpf_loss(ygen, ypred, batch)
                for param in model.parameters():
                    param.grad = None
            else:
                with torch.no_grad():
                    loss = mlpf_loss(ygen, ypred, batch)

        if is_train:
            loss["Total"].backward()
            loss_accum += loss["Total"].detach().cpu().item()
            optimizer.step()
            if lr_schedule:
                lr_schedule.step()

        for loss_ in loss.keys():
            if loss_ not in epoch_loss:
                epoch_loss[loss_] = 0.0
            epoch_loss[loss_] += loss[loss_].detach()

    num_data = torch.tensor(len(data_loader), device=rank)
    # sum up the number of steps from all workers
    if world_size > 1:
        torch.distributed.all_reduce(num_data)

    for loss_ in epoch_loss:
        # sum up the losses from all workers
        if world_size > 1:
            torch.distributed.all_reduce(epoch_loss[loss_])
        epoch_loss[loss_] = epoch_loss[loss_].cpu().item() / num_data.cpu().item()

    return epoch_loss


def train_mlpf(rank, world_size, model, optimizer, train_loader, valid_loader, num_epochs, outdir,
               lr_schedule=None, dtype=torch.float32):
    best_val_loss = np.inf
    for epoch in range(1, num_epochs + 1):
        t0 = time.time()
        losses_t = train_and_valid(rank, world_size, outdir, model, optimizer, train_loader, is_train=True,
                                   lr_schedule=lr_schedule, epoch=epoch, dtype=dtype)
        losses_v = train_and_valid(rank, world_size, outdir, model, optimizer, valid_loader, is_train=False,
                                   epoch=epoch, dtype=dtype)
        if (rank == 0) or (rank == "cpu"):
            if losses_v["Total"] < best_val_loss:
                best_val_loss = losses_v["Total"]
                save_checkpoint(Path(outdir) / "best_weights.pth", model, optimizer, {"epoch": epoch})
            _logger.info(f"epoch={epoch} train_loss={losses_t['Total']:.4f} valid_loss={losses_v['Total']:.4f} "
                         f"time={time.time() - t0:.1f}s")
    return best_val_loss


def build(rank, model_kwargs, lr):
    model = MLPF(**model_kwargs).to(torch.device(rank))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    return model, optimizer
