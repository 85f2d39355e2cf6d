"""A GAN in its common textbook form, written for this test: two models,
a discriminator ending in nn.Sigmoid(), and one nn.BCELoss() criterion called at three places per
step. A second criterion (an auxiliary classifier's) is called at two more places."""

import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self, latent_dim=100, img_shape=(1, 28, 28)):
        super().__init__()
        self.img_shape = img_shape
        self.model = nn.Sequential(nn.Linear(latent_dim, 128), nn.LeakyReLU(0.2), nn.Linear(128, 784), nn.Tanh())

    def forward(self, z):
        return self.model(z).view(z.size(0), *self.img_shape)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(784, 128), nn.LeakyReLU(0.2), nn.Linear(128, 1), nn.Sigmoid())

    def forward(self, img):
        return self.model(img.view(img.size(0), -1))


adversarial_loss = torch.nn.BCELoss()
auxiliary_loss = torch.nn.BCELoss()
generator, discriminator = Generator(), Discriminator()
classifier = nn.Sequential(nn.Linear(784, 1), nn.Sigmoid())
optimizer_G = torch.optim.Adam(generator.parameters(), lr=2e-4)
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=2e-4)
dataloader = [(torch.rand(8, 1, 28, 28), torch.randint(0, 2, (8, 1)).float()) for _ in range(2)]

for epoch in range(2):
    for imgs, labels in dataloader:
        valid = torch.ones(imgs.size(0), 1)
        fake = torch.zeros(imgs.size(0), 1)
        optimizer_G.zero_grad()
        z = torch.randn(imgs.size(0), 100)
        gen_imgs = generator(z)
        g_loss = adversarial_loss(discriminator(gen_imgs), valid)  # first call of adversarial_loss
        g_loss = g_loss + auxiliary_loss(classifier(gen_imgs.view(8, -1)), labels)  # first call of auxiliary_loss
        g_loss.backward()
        optimizer_G.step()
        optimizer_D.zero_grad()
        real_loss = adversarial_loss(discriminator(imgs), valid)
        fake_loss = adversarial_loss(discriminator(gen_imgs.detach()), fake)
        aux = auxiliary_loss(classifier(imgs.view(8, -1)), labels)
        d_loss = (real_loss + fake_loss) / 2 + aux
        d_loss.backward()
        optimizer_D.step()
