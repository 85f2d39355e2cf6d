import torch
import torch.nn as nn
import torch.optim as optim


class GAN:
    def __init__(self, image_size, channels=1, latent_dims=100, lr=0.0002, beta1=0.5, device=torch.device("cpu")):
        self.latent_dims = latent_dims
        self.device = device
        self.generator = nn.Sequential(
            nn.Linear(latent_dims, 256), nn.LeakyReLU(0.2),
            nn.Linear(256, channels * image_size * image_size), nn.Tanh()).to(device)
        self.discriminator = nn.Sequential(
            nn.Linear(channels * image_size * image_size, 256), nn.LeakyReLU(0.2),
            nn.Linear(256, 1), nn.Sigmoid()).to(device)
        self.criterion = nn.BCELoss()
        self.optimizerD = optim.Adam(self.discriminator.parameters(), lr=lr, betas=(beta1, 0.999))
        self.optimizerG = optim.Adam(self.generator.parameters(), lr=lr, betas=(beta1, 0.999))
        self.real_label = 1.0
        self.fake_label = 0.0

    def step(self, data):
        real_cpu = data[0].to(self.device).flatten(1)
        b_size = real_cpu.size(0)
        label = torch.full((b_size,), self.real_label, dtype=torch.float, device=self.device)
        # Forward pass real batch through D
        output = self.discriminator(real_cpu).view(-1)
        errD_real = self.criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()

        noise = torch.randn(b_size, self.latent_dims, device=self.device)
        fake = self.generator(noise)
        label.fill_(self.fake_label)
        output = self.discriminator(fake.detach()).view(-1)
        errD_fake = self.criterion(output, label)
        errD_fake.backward()
        errD = errD_real + errD_fake
        self.optimizerD.step()

        self.generator.zero_grad()
        label.fill_(self.real_label)
        output = self.discriminator(fake).view(-1)
        errG = self.criterion(output, label)
        errG.backward()
        self.optimizerG.step()
        return errD.item(), D_x
