import torch
import torch.utils.data as Data
import torchvision
from torch import nn
from torch.autograd import Variable

from lib.network import Network

train_data = torchvision.datasets.MNIST(root='./mnist', train=True,
                                        transform=torchvision.transforms.ToTensor(), download=True)
test_data = torchvision.datasets.MNIST(root='./mnist/', train=False,
                                       transform=torchvision.transforms.ToTensor())
train_loader = Data.DataLoader(dataset=train_data, batch_size=128, shuffle=True)
test_loader = Data.DataLoader(dataset=test_data, batch_size=128, shuffle=False)

cuda = torch.cuda.is_available()
net = Network()
if cuda:
    net.cuda()

opt = torch.optim.Adam(net.parameters(), lr=0.001)
loss_func = nn.CrossEntropyLoss()

for epoch_index in range(10):
    net.train()
    for batch_index, (img_batch, label_batch) in enumerate(train_loader):
        if cuda:
            img_batch = img_batch.cuda()
            label_batch = label_batch.cuda()
        img_batch = Variable(img_batch)
        label_batch = Variable(label_batch)

        predict = net(img_batch)
        loss = loss_func(predict, label_batch)

        net.zero_grad()
        loss.backward()
        opt.step()

    total = 0
    correct = 0
    net.eval()
    with torch.no_grad():
        for batch_index, (img_batch, label_batch) in enumerate(test_loader):
            if cuda:
                img_batch = img_batch.cuda()
                label_batch = label_batch.cuda()
            img_batch = Variable(img_batch)

            predict = net(img_batch)
            predict = torch.argmax(predict, 1)
            correct += (predict == label_batch).sum().item()
            total += label_batch.size(0)

    print('(Test) Epoch %d, acc: %.3f' % (epoch_index, correct / total))
