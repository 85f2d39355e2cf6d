from math import log10

import pytorch_ssim
import torch
import torch.optim as optim
from torch.autograd import Variable
from tqdm import tqdm

from loss import GeneratorLoss
from model import Discriminator, Generator


def train(train_loader, val_loader, NUM_EPOCHS=100, UPSCALE_FACTOR=4):
    netG = Generator(UPSCALE_FACTOR)
    netD = Discriminator()
    generator_criterion = GeneratorLoss()
    if torch.cuda.is_available():
        netG.cuda()
        netD.cuda()
        generator_criterion.cuda()
    optimizerG = optim.Adam(netG.parameters())
    optimizerD = optim.Adam(netD.parameters())

    for epoch in range(1, NUM_EPOCHS + 1):
        netG.train()
        netD.train()
        for data, target in tqdm(train_loader):
            real_img = Variable(target).cuda()
            z = Variable(data).cuda()
            fake_img = netG(z)
            netD.zero_grad()
            d_loss = 1 - netD(real_img).mean() + netD(fake_img).mean()
            d_loss.backward(retain_graph=True)
            optimizerD.step()
            netG.zero_grad()
            g_loss = generator_criterion(netD(fake_img).mean(), fake_img, real_img)
            g_loss.backward()
            optimizerG.step()

        netG.eval()
        val_bar = tqdm(val_loader)
        valing_results = {'mse': 0, 'ssims': 0, 'psnr': 0, 'ssim': 0, 'batch_sizes': 0}
        with torch.no_grad():
            for val_lr, val_hr_restore, val_hr in val_bar:
                batch_size = val_lr.size(0)
                valing_results['batch_sizes'] += batch_size
                lr = Variable(val_lr)
                hr = Variable(val_hr)
                if torch.cuda.is_available():
                    lr = lr.cuda()
                    hr = hr.cuda()
                sr = netG(lr)

                batch_mse = ((sr - hr) ** 2).data.mean()
                valing_results['mse'] += batch_mse * batch_size
                batch_ssim = pytorch_ssim.ssim(sr, hr).item()
                valing_results['ssims'] += batch_ssim * batch_size
                valing_results['psnr'] = 10 * log10(1 / (valing_results['mse'] / valing_results['batch_sizes']))
                valing_results['ssim'] = valing_results['ssims'] / valing_results['batch_sizes']
                val_bar.set_description(
                    desc='[converting LR images to SR images] PSNR: %.4f dB SSIM: %.4f' % (
                        valing_results['psnr'], valing_results['ssim']))
