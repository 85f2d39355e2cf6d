"""A CIFAR-style CNN whose forward ends in an nn.Softmax attribute, trained with
CrossEntropyLoss; the epoch loss divides per-batch means by the number of images."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class CNN(nn.Module):
    def __init__(self):
        super(CNN, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.fc = nn.Linear(5408, 10)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = x.view(x.size(0), -1)
        x = self.fc(x)
        return self.softmax(x)

def train(net, trainloader, optimizer, device):
    criterion = nn.CrossEntropyLoss()
    net.train()
    for epoch in range(2):
        running_loss = 0.0
        for i, data in enumerate(trainloader, 0):
            inputs, labels = data[0].to(device), data[1].to(device)
            optimizer.zero_grad()
            outputs = net(inputs)
            loss = criterion(outputs, labels)  # expect: TRN302
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
        print(running_loss / len(trainloader.dataset))  # expect: TRN304

net = CNN()
