import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.autograd import Variable
from torch.utils.data import DataLoader

from utils.utils import MyDataset, Net

train_data = MyDataset(txt_path='../../Data/train.txt')
valid_data = MyDataset(txt_path='../../Data/valid.txt')
train_loader = DataLoader(dataset=train_data, batch_size=16, shuffle=True)
valid_loader = DataLoader(dataset=valid_data, batch_size=16)
classes_name = ['plane', 'car', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse', 'ship', 'truck']
max_epoch = 1

net = Net()
net.initialize_weights()

criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9, dampening=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=50, gamma=0.1)

for epoch in range(max_epoch):

    loss_sigma = 0.0
    correct = 0.0
    total = 0.0

    for i, data in enumerate(train_loader):
        inputs, labels = data
        inputs, labels = Variable(inputs), Variable(labels)

        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()

        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).squeeze().sum().numpy()
        loss_sigma += loss.item()
    scheduler.step()

    # ------------------------------------ 观察模型在验证集上的表现 ------------------------------------
    if epoch % 2 == 0:
        loss_sigma = 0.0
        cls_num = len(classes_name)
        conf_mat = np.zeros([cls_num, cls_num])
        net.eval()
        for i, data in enumerate(valid_loader):
            images, labels = data
            images, labels = Variable(images), Variable(labels)
            outputs = net(images)
            outputs.detach_()
            loss = criterion(outputs, labels)
            loss_sigma += loss.item()
            _, predicted = torch.max(outputs.data, 1)
            for j in range(len(labels)):
                conf_mat[labels[j].numpy(), predicted[j].numpy()] += 1.0
        print('{} set Accuracy:{:.2%}'.format('Valid', conf_mat.trace() / conf_mat.sum()))
print('Finished Training')
