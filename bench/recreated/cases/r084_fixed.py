import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import transforms

from dataset import Fer2013
from models import get_model


def evaluate(model, loader, criterion, device):
    model.eval()
    correct = 0
    total = 0
    loss_sum = 0.0
    with torch.no_grad():
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            bs, ncrops, c, h, w = images.shape
            images = images.view(-1, c, h, w)
            outputs = model(images)
            outputs = outputs.view(bs, ncrops, -1).mean(1)
            loss = criterion(outputs, labels)
            loss_sum += loss.item() * bs
            _, preds = torch.max(outputs, 1)
            correct += (preds == labels).sum().item()
            total += bs
    return loss_sum / total, 100.0 * correct / total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--arch', default='resnet18')
    parser.add_argument('--checkpoint', required=True)
    parser.add_argument('--data-path', default='./data/fer2013.csv')
    parser.add_argument('--batch-size', type=int, default=64)
    args = parser.parse_args()

    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    mu, st = 0, 255
    test_transform = transforms.Compose([
        transforms.TenCrop(40),
        transforms.Lambda(lambda crops: torch.stack([transforms.ToTensor()(crop) for crop in crops])),
        transforms.Lambda(lambda tensors: torch.stack(
            [transforms.Normalize(mean=(mu,), std=(st,))(t) for t in tensors])),
    ])
    test_set = Fer2013(args.data_path, 'test', transform=test_transform)
    test_loader = DataLoader(test_set, batch_size=args.batch_size, shuffle=False, num_workers=4)

    model = get_model(args.arch)
    checkpoint = torch.load(args.checkpoint, map_location=device)
    model.load_state_dict(checkpoint['model_state_dict'])
    model = model.to(device)
    criterion = nn.CrossEntropyLoss()

    test_loss, test_acc = evaluate(model, test_loader, criterion, device)
    print('Test loss: %.4f, Test accuracy: %.2f%%' % (test_loss, test_acc))


if __name__ == '__main__':
    main()
