import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.nn.parameter import Parameter

from utils import load_dataset, generate_batches, accuracy, AverageMeter


class ApproxRepSet(torch.nn.Module):

    def __init__(self, n_hidden_sets, n_elements, d, n_classes, device):
        super(ApproxRepSet, self).__init__()
        self.n_hidden_sets = n_hidden_sets
        self.n_elements = n_elements

        self.Wc = Parameter(torch.FloatTensor(d, n_hidden_sets * n_elements))
        self.fc1 = nn.Linear(n_hidden_sets, 32)
        self.fc2 = nn.Linear(32, n_classes)
        self.relu = nn.ReLU()

        self.init_weights()

    def init_weights(self):
        self.Wc.data.uniform_(-1, 1)

    def forward(self, X):
        t = self.relu(torch.matmul(X, self.Wc))
        t = t.view(t.size()[0], t.size()[1], self.n_elements, self.n_hidden_sets)
        t, _ = torch.max(t, dim=2)
        t = torch.sum(t, dim=1)
        t = self.relu(self.fc1(t))
        out = self.fc2(t)

        return out


parser = argparse.ArgumentParser()
parser.add_argument('--dataset', default='twitter')
parser.add_argument('--batch-size', type=int, default=64)
parser.add_argument('--epochs', type=int, default=250)
parser.add_argument('--lr', type=float, default=1e-2)
parser.add_argument('--n-hidden-sets', type=int, default=20)
parser.add_argument('--n-elements', type=int, default=10)
args = parser.parse_args()

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X_train, X_test, y_train, y_test, d, n_classes = load_dataset(args.dataset)
train_batches = generate_batches(X_train, y_train, args.batch_size, device)
test_batches = generate_batches(X_test, y_test, args.batch_size, device)

model = ApproxRepSet(args.n_hidden_sets, args.n_elements, d, n_classes, device).to(device)
optimizer = optim.Adam(model.parameters(), lr=args.lr)


def train(X, y):
    optimizer.zero_grad()
    output = model(X)
    loss_train = F.cross_entropy(output, y)
    loss_train.backward()
    optimizer.step()
    return output, loss_train


def test(X, y):
    output = model(X)
    loss_test = F.cross_entropy(output, y)
    return output, loss_test


for epoch in range(args.epochs):
    start = time.time()
    model.train()
    train_loss = AverageMeter()
    train_acc = AverageMeter()
    for X, y in train_batches:
        output, loss = train(X, y)
        train_loss.update(loss.item(), output.size(0))
        train_acc.update(accuracy(output.data, y.data), output.size(0))

    model.eval()
    test_loss = AverageMeter()
    test_acc = AverageMeter()
    with torch.no_grad():
        for X, y in test_batches:
            output, loss = test(X, y)
            test_loss.update(loss.item(), output.size(0))
            test_acc.update(accuracy(output.data, y.data), output.size(0))

    print("epoch:", '%03d' % (epoch + 1), "train_loss=", "{:.5f}".format(train_loss.avg),
          "train_acc=", "{:.5f}".format(train_acc.avg), "test_loss=", "{:.5f}".format(test_loss.avg),
          "test_acc=", "{:.5f}".format(test_acc.avg), "time=", "{:.5f}".format(time.time() - start))
print("Test accuracy:", np.round(test_acc.avg, 4))
