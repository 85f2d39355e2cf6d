import torch
from torch.cuda.amp import GradScaler, autocast

from rvc.lib.algorithm.commons import clip_grad_value, slice_segments
from rvc.train.losses import discriminator_loss, feature_loss, generator_loss, kl_loss


def train_and_evaluate(epoch, hps, nets, optims, scaler: GradScaler, train_loader, fn_mel_loss, config):
    net_g, net_d = nets
    optim_g, optim_d = optims
    net_g.train()
    net_d.train()
    for batch_idx, info in enumerate(train_loader):
        phone, phone_lengths, pitch, pitchf, spec, spec_lengths, wave, wave_lengths, sid = info
        with autocast(enabled=config.train.fp16_run):
            y_hat, ids_slice, x_mask, z_mask, (z, z_p, m_p, logs_p, m_q, logs_q) = net_g(
                phone, phone_lengths, pitch, pitchf, spec, spec_lengths, sid)
            wave = slice_segments(wave, ids_slice * config.data.hop_length, config.train.segment_size)
            y_d_hat_r, y_d_hat_g, _, _ = net_d(wave, y_hat.detach())
            loss_disc, losses_disc_r, losses_disc_g = discriminator_loss(y_d_hat_r, y_d_hat_g)
        optim_d.zero_grad()
        scaler.scale(loss_disc).backward()
        scaler.unscale_(optim_d)
        grad_norm_d = clip_grad_value(net_d.parameters(), None)
        scaler.step(optim_d)

        with autocast(enabled=config.train.fp16_run):
            y_d_hat_r, y_d_hat_g, fmap_r, fmap_g = net_d(wave, y_hat)
            loss_mel = fn_mel_loss(wave, y_hat) * config.train.c_mel
            loss_kl = kl_loss(z_p, logs_q, m_p, logs_p, z_mask) * config.train.c_kl
            loss_fm = feature_loss(fmap_r, fmap_g)
            loss_gen, losses_gen = generator_loss(y_d_hat_g)
            loss_gen_all = loss_gen + loss_fm + loss_mel + loss_kl
        optim_g.zero_grad()
        scaler.scale(loss_gen_all).backward()
        scaler.unscale_(optim_g)
        grad_norm_g = clip_grad_value(net_g.parameters(), None)
        scaler.step(optim_g)
        scaler.update()

        optim_g.step()
        optim_d.step()
    return grad_norm_d, grad_norm_g
