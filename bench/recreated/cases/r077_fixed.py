import argparse
import time

import torch
import torch.nn as nn
import torch.backends.cudnn as cudnn
import torchvision.datasets as datasets
import torchvision.models as models
import torchvision.transforms as transforms

from models import wrapper

parser = argparse.ArgumentParser(description='PyTorch ImageNet Training with pruning and quantization')
parser.add_argument('data', metavar='DIR', help='path to dataset')
parser.add_argument('-a', '--arch', default='resnet18')
parser.add_argument('--epochs', default=90, type=int)
parser.add_argument('-b', '--batch-size', default=256, type=int)
parser.add_argument('--lr', '--learning-rate', default=0.1, type=float)
parser.add_argument('--momentum', default=0.9, type=float)
parser.add_argument('--wd', '--weight-decay', default=1e-4, type=float, dest='weight_decay')
parser.add_argument('--pretrained', action='store_true')
parser.add_argument('--gpu', default=0, type=int)
parser.add_argument('--qa', default=8, type=int, help='quantization bits of activations')
parser.add_argument('--qw', default=8, type=int, help='quantization bits of weights')
parser.add_argument('--sparsity', default=0.0, type=float)
parser.add_argument('--INS', default=0, type=int)
parser.add_argument('--beta', default=1.0, type=float)


def get_optimizer(model, args):
    return torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum, weight_decay=args.weight_decay)


def train(train_loader, model, criterion, optimizer, epoch, args):
    model.train()
    end = time.time()
    for i, (images, target) in enumerate(train_loader):
        images = images.cuda(args.gpu, non_blocking=True)
        target = target.cuda(args.gpu, non_blocking=True)
        output = model(images)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if i % 100 == 0:
            print('Epoch [{}][{}/{}] loss {:.4f} time {:.3f}'.format(epoch, i, len(train_loader), loss.item(),
                                                                     time.time() - end))
        end = time.time()


def main():
    args = parser.parse_args()
    model = models.__dict__[args.arch](pretrained=args.pretrained)
    torch.cuda.set_device(args.gpu)
    model = model.cuda(args.gpu)

    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train_dataset = datasets.ImageFolder(args.data + '/train', transforms.Compose([
        transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(), transforms.ToTensor(), normalize]))
    train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=args.batch_size, shuffle=True,
                                               num_workers=8, pin_memory=True)
    args.batch_num = len(train_loader)

    # prune and quantize the model
    wrapper.replace_conv_recursively(model, 'Conv2dSQ', nbits_a=args.qa, nbits_w=args.qw,
                                     sparsity=args.sparsity,
                                     total_iter=args.batch_num * args.epochs, INS=args.INS, beta=args.beta)
    model = model.cuda(args.gpu)
    # define loss function (criterion) and optimizer after process model
    criterion = nn.CrossEntropyLoss().cuda(args.gpu)
    optimizer = get_optimizer(model, args)
    cudnn.benchmark = True

    for epoch in range(args.epochs):
        train(train_loader, model, criterion, optimizer, epoch, args)


if __name__ == '__main__':
    main()
