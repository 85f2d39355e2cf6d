import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from tqdm import tqdm


class unetConv2(nn.Module):
    def __init__(self, in_size, out_size, is_batchnorm=True):
        super(unetConv2, self).__init__()
        self.conv = nn.Sequential(nn.Conv2d(in_size, out_size, 3, 1, 1),
                                  nn.BatchNorm2d(out_size), nn.ReLU(inplace=True))

    def forward(self, inputs):
        return self.conv(inputs)


class UNet_3Plus(nn.Module):
    def __init__(self, in_channels=3, n_classes=1):
        super(UNet_3Plus, self).__init__()
        self.n_classes = n_classes
        self.conv1 = unetConv2(in_channels, 64)
        self.conv2 = unetConv2(64, 128)
        self.hd1_conv = unetConv2(128 + 64, 64)
        self.outconv1 = nn.Conv2d(64, n_classes, 3, padding=1)

    def forward(self, inputs):
        h1 = self.conv1(inputs)
        h2 = self.conv2(F.max_pool2d(h1, 2))
        hd1 = self.hd1_conv(torch.cat([h1, F.interpolate(h2, scale_factor=2)], 1))
        d1 = self.outconv1(hd1)  # d1->320*320*n_classes
        return F.sigmoid(d1)


def train_net(net, device, train_loader, epochs=5, lr=0.001):
    optimizer = optim.RMSprop(net.parameters(), lr=lr, weight_decay=1e-8, momentum=0.9)
    if net.n_classes > 1:
        criterion = nn.CrossEntropyLoss()
    else:
        criterion = nn.BCEWithLogitsLoss()

    for epoch in range(epochs):
        net.train()
        epoch_loss = 0
        with tqdm(total=len(train_loader), desc=f'Epoch {epoch + 1}/{epochs}', unit='img') as pbar:
            for batch in train_loader:
                imgs = batch['image']
                true_masks = batch['mask']
                imgs = imgs.to(device=device, dtype=torch.float32)
                mask_type = torch.float32 if net.n_classes == 1 else torch.long
                true_masks = true_masks.to(device=device, dtype=mask_type)

                masks_pred = net(imgs)
                loss = criterion(masks_pred, true_masks)
                epoch_loss += loss.item()
                pbar.set_postfix(**{'loss (batch)': loss.item()})

                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_value_(net.parameters(), 0.1)
                optimizer.step()
                pbar.update(1)
