"""DCGAN-style loop: scalars logged with .item(), losses summed inside one step. Nothing to flag."""
import torch
import torch.nn as nn

criterion = nn.BCELoss()
G_losses, D_losses = [], []


def train(netG, netD, dataloader, optimizerD, optimizerG, nz, device):
    for epoch in range(5):
        for i, data in enumerate(dataloader, 0):
            netD.zero_grad()
            real = data[0].to(device)
            label = torch.full((real.size(0),), 1.0, device=device)
            output = netD(real).view(-1)
            errD_real = criterion(output, label)
            errD_real.backward()
            noise = torch.randn(real.size(0), nz, 1, 1, device=device)
            fake = netG(noise)
            label.fill_(0.0)
            output = netD(fake.detach()).view(-1)
            errD_fake = criterion(output, label)
            errD_fake.backward()
            errD = errD_real + errD_fake
            optimizerD.step()
            netG.zero_grad()
            label.fill_(1.0)
            output = netD(fake).view(-1)
            errG = criterion(output, label)
            errG.backward()
            optimizerG.step()
            G_losses.append(errG.item())
            D_losses.append(errD.item())
