import argparse
import math
import os
import sys

import numpy as np
import torch
import torch.backends.cudnn as cudnn
import torch.optim as optim
from scipy.stats import spearmanr, pearsonr

from croppingModel import build_crop_model
from croppingDataset import GAICD

parser = argparse.ArgumentParser(description='Grid anchor based image cropping')
parser.add_argument('--dataset_root', default='dataset/GAIC/', help='Dataset root directory path')
parser.add_argument('--base_model', default='mobilenetv2', help='Pretrained base model')
parser.add_argument('--scale', default='multi', type=str, help='choose single or multi scale')
parser.add_argument('--downsample', default=4, type=int, help='downsample time')
parser.add_argument('--augmentation', default=1, type=int, help='choose single or multi scale')
parser.add_argument('--image_size', default=256, type=int, help='Batch size for training')
parser.add_argument('--align_size', default=9, type=int, help='Spatial size of RoIAlign and RoDAlign')
parser.add_argument('--reduced_dim', default=8, type=int, help='Spatial size of RoIAlign and RoDAlign')
parser.add_argument('--batch_size', default=1, type=int, help='Batch size for training')
parser.add_argument('--num_workers', default=0, type=int, help='Number of workers used in dataloading')
parser.add_argument('--lr', '--learning-rate', default=1e-4, type=float, help='initial learning rate')
parser.add_argument('--save_folder', default='weights/ablation/cropping/', help='Directory for saving checkpoint models')
args = parser.parse_args()

if not os.path.exists(args.save_folder):
    os.makedirs(args.save_folder)

cudnn.benchmark = True

data_loader_train = torch.utils.data.DataLoader(
    GAICD(image_size=args.image_size, dataset_dir=args.dataset_root, set='train', augmentation=args.augmentation),
    batch_size=args.batch_size, num_workers=args.num_workers, shuffle=True)
data_loader_test = torch.utils.data.DataLoader(
    GAICD(image_size=args.image_size, dataset_dir=args.dataset_root, set='test'),
    batch_size=args.batch_size, num_workers=args.num_workers, shuffle=False)

net = build_crop_model(scale=args.scale, alignsize=args.align_size, reddim=args.reduced_dim, loadweight=True,
                       model=args.base_model, downsample=args.downsample)
net = net.cuda()
optimizer = optim.Adam(net.parameters(), lr=args.lr)


def test():
    net.eval()
    acc4_5 = []
    acc4_10 = []
    srcc = []
    for id, sample in enumerate(data_loader_test):
        image = sample['image'].cuda()
        bboxs = sample['bbox']
        MOS = sample['MOS']
        roi = []
        for idx in range(0, len(bboxs['xmin'])):
            roi.append((0, bboxs['xmin'][idx], bboxs['ymin'][idx], bboxs['xmax'][idx], bboxs['ymax'][idx]))
        with torch.no_grad():
            out = net(image, roi)
        id_MOS = sorted(range(len(MOS)), key=lambda k: MOS[k], reverse=True)
        id_out = sorted(range(len(out)), key=lambda k: out[k], reverse=True)
        rank_of_returned_crop = [id_MOS.index(i) for i in id_out[:4]]
        acc4_5.append(sum(r < 5 for r in rank_of_returned_crop) / 4.0)
        acc4_10.append(sum(r < 10 for r in rank_of_returned_crop) / 4.0)
        srcc.append(spearmanr(MOS, out.squeeze().cpu().numpy())[0])
    return sum(acc4_5) / len(acc4_5), sum(acc4_10) / len(acc4_10), sum(srcc) / len(srcc)


def train():
    for epoch in range(0, 80):
        total_loss = 0
        for id, sample in enumerate(data_loader_train):
            image = sample['image'].cuda()
            bboxs = sample['bbox']
            MOS = sample['MOS'].cuda()
            roi = []
            for idx in range(0, len(bboxs['xmin'])):
                roi.append((0, bboxs['xmin'][idx], bboxs['ymin'][idx], bboxs['xmax'][idx], bboxs['ymax'][idx]))

            optimizer.zero_grad()
            out = net(image, roi)
            loss = torch.nn.SmoothL1Loss(reduction='mean')(out.squeeze(), MOS)
            total_loss += loss.item()
            avg_loss = total_loss / (id + 1)
            loss.backward()
            optimizer.step()
            sys.stdout.write('\r[Epoch %d/%d] [Batch %d/%d] [Train Loss: %.4f]' % (
                epoch, 79, id, len(data_loader_train), avg_loss))

        acc4_5, acc4_10, avg_srcc = test()
        sys.stdout.write('[Test SRCC: %.3f] [Acc4/5: %.3f] [Acc4/10: %.3f]\n' % (avg_srcc, acc4_5, acc4_10))
        torch.save(net.state_dict(), args.save_folder + '/' + repr(epoch) + '_%.3f_%.3f' % (acc4_5, acc4_10) + '.pth')


if __name__ == '__main__':
    train()
