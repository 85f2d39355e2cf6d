import torch
import torch.nn.functional as F


def train_step(unet, vae, text_encoder, noise_scheduler, batch, optimizer, weight_dtype=torch.float16):
    pixel_values = batch["pixel_values"].to(weight_dtype)
    masks = batch["masks"].to(weight_dtype)
    with torch.no_grad():
        latents = vae.encode(pixel_values).latent_dist.sample()
        latents = latents * 0.18215
        encoder_hidden_states = text_encoder(batch["input_ids"])[0]

    # Sample noise that we'll add to the latents
    noise = torch.randn_like(latents)
    bsz = latents.shape[0]
    timesteps = torch.randint(0, noise_scheduler.config.num_train_timesteps, (bsz,), device=latents.device)
    timesteps = timesteps.long()
    noisy_latents = noise_scheduler.add_noise(latents, noise, timesteps)
    target = noise

    # Predict the noise residual and compute loss
    model_pred = unet(noisy_latents, timesteps, encoder_hidden_states).sample
    loss = F.mse_loss(model_pred.float(), target.float(), reduction="none")
    masks = F.interpolate(masks, size=loss.shape[-3:])
    loss = loss * masks
    loss = loss.sum([1, 2, 3, 4]) / masks.sum([1, 2, 3, 4])
    loss = loss.mean()

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()
