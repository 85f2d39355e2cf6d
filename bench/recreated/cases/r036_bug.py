import torch
import torch.nn as nn
from torchinfo import summary


class ConvBlock(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size=3):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel_size, padding=kernel_size // 2)
        self.bn = nn.BatchNorm2d(out_ch)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Model(nn.Module):
    def __init__(self, convblocks_list, num_classes=10):
        super().__init__()
        self.conv_blocks = self.BuildConvBlocks(convblocks_list)
        self.head = nn.Linear(convblocks_list[-1][1], num_classes)

    def BuildConvBlocks(self, convblocks_list):
        blocks = []
        for in_ch, out_ch in convblocks_list:
            blocks.append(ConvBlock(in_ch, out_ch))
        return blocks

    def forward(self, x):
        for block in self.conv_blocks:
            x = block(x)
        x = x.mean(dim=(2, 3))
        return self.head(x)


model = Model([(3, 32), (32, 64), (64, 128)])
summary(model, input_size=(1, 3, 64, 64))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
