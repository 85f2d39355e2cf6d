import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torchvision import datasets, transforms

from jacobian import JacobianReg


class MLP(nn.Module):
    def __init__(self):
        super(MLP, self).__init__()
        self.fc1 = nn.Linear(28 * 28, 64)
        self.fc2 = nn.Linear(64, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x):
        x = x.view(-1, 28 * 28)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def eval(device, model, loader, criterion, lambda_JR):
    '''
    Evaluate a model on a dataset for Jacobian regularization

    Arguments:
        device (torch.device): specifies cpu or gpu training
        model (nn.Module): the neural network to evaluate
        loader (DataLoader): a loader for the dataset to eval
        criterion (nn.Module): the supervised loss function
        lambda_JR (float): the Jacobian regularization weight

    Returns:
        correct (int): the number correct
        total (int): the total number of examples
        loss_super (float): the supervised loss
        loss_JR (float): the Jacobian regularization loss
        loss (float): the total combined loss
    '''

    correct = 0
    total = 0
    loss_super_avg = 0
    loss_JR_avg = 0
    loss_avg = 0

    # for eval, let's compute the jacobian exactly
    # so n, the number of projections, is set to -1.
    reg_full = JacobianReg(n=-1)
    for data, targets in loader:
        data = data.to(device)
        data.requires_grad = True  # this is essential!
        targets = targets.to(device)
        output = model(data)
        _, predicted = torch.max(output, 1)  # for accuracy
        correct += (predicted == targets).sum().item()
        total += targets.size(0)
        loss_super = criterion(output, targets)  # supervised loss
        loss_JR = reg_full(data, output)  # Jacobian regularization
        loss = loss_super + lambda_JR * loss_JR  # full loss
        loss_super_avg += loss_super.item() * targets.size(0)
        loss_JR_avg += loss_JR.item() * targets.size(0)
        loss_avg += loss.item() * targets.size(0)
    loss_super_avg /= total
    loss_JR_avg /= total
    loss_avg /= total
    return correct, total, loss_super_avg, loss_JR_avg, loss_avg


def main():
    parser = argparse.ArgumentParser(description='PyTorch MNIST with Jacobian regularization')
    parser.add_argument('--epochs', type=int, default=5)
    parser.add_argument('--lambda-JR', type=float, default=0.01)
    args = parser.parse_args()

    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train_loader = torch.utils.data.DataLoader(
        datasets.MNIST('data', train=True, download=True, transform=transform), batch_size=64, shuffle=True)
    test_loader = torch.utils.data.DataLoader(
        datasets.MNIST('data', train=False, transform=transform), batch_size=1000, shuffle=False)

    model = MLP().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    reg = JacobianReg()  # Jacobian regularization with one random projection

    for epoch in range(args.epochs):
        for idx, (data, target) in enumerate(train_loader):
            data, target = data.to(device), target.to(device)
            data.requires_grad = True  # this is essential!
            optimizer.zero_grad()
            output = model(data)
            loss_super = criterion(output, target)
            R = reg(data, output)
            loss = loss_super + args.lambda_JR * R
            loss.backward()
            optimizer.step()

        correct, total, loss_super, loss_JR, loss = eval(device, model, test_loader, criterion, args.lambda_JR)
        print('[%d] accuracy: %.3f loss_super: %.4f loss_JR: %.4f loss: %.4f' % (
            epoch, correct / total, loss_super, loss_JR, loss))


if __name__ == '__main__':
    main()
