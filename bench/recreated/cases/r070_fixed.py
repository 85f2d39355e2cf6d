import os

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.autograd import Variable

criterion = nn.CrossEntropyLoss()


def train(args, model, optimizer, epoch, trainloader, trainset, viz, use_cuda, train_log):
    model.train()
    correct = 0
    total = 0
    for batch_idx, (inputs, targets) in enumerate(trainloader):
        if use_cuda:
            inputs, targets = inputs.cuda(), targets.cuda()
        optimizer.zero_grad()
        inputs, targets = Variable(inputs, requires_grad=True), Variable(targets)
        out, out_bij = model(inputs)
        loss = criterion(out, targets)
        loss.backward()
        optimizer.step()

        _, predicted = torch.max(out.data, 1)
        total += targets.size(0)
        correct += predicted.eq(targets.data).sum().item()
        if batch_idx % args.log_every == 0:
            train_log.write("{} {} {} {}\n".format(epoch, batch_idx, loss.item(), 100. * correct / total))


def test(best_result, args, model, epoch, testloader, viz, use_cuda, test_log):
    model.eval()
    objective = 0.
    correct = 0
    total = 0
    with torch.no_grad():
        for batch_idx, (inputs, targets) in enumerate(testloader):
            if use_cuda:
                inputs, targets = inputs.cuda(), targets.cuda()
            inputs, targets = Variable(inputs, requires_grad=True), Variable(targets)
            out, out_bij = model(inputs)
            loss = criterion(out, targets)
            objective += loss.item()

            _, predicted = torch.max(out.data, 1)
            total += targets.size(0)
            correct += predicted.eq(targets.data).sum().item()

    acc = 100. * correct / total
    test_log.write("{} {} {}\n".format(epoch, objective / (batch_idx + 1), acc))
    if acc > best_result:
        torch.save({'model': model.state_dict(), 'acc': acc, 'epoch': epoch},
                   os.path.join(args.save_dir, 'checkpoint.t7'))
        best_result = acc
    return best_result


def learning_rate(init, epoch):
    optim_factor = 0
    if epoch > 160:
        optim_factor = 3
    elif epoch > 120:
        optim_factor = 2
    elif epoch > 60:
        optim_factor = 1
    return init * np.power(0.2, optim_factor)


def run(args, model, trainloader, trainset, testloader, viz, use_cuda, train_log, test_log):
    best_result = 0
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9,
                          weight_decay=args.weight_decay, nesterov=args.nesterov)
    for epoch in range(1, 1 + args.epochs):
        for param_group in optimizer.param_groups:
            param_group['lr'] = learning_rate(args.lr, epoch)
        train(args, model, optimizer, epoch, trainloader, trainset, viz, use_cuda, train_log)
        best_result = test(best_result, args, model, epoch, testloader, viz, use_cuda, test_log)
