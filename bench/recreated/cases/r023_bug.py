import torch
import torch.nn as nn
import torch.nn.functional as F
from ptflops import get_model_complexity_info


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.relu(self.conv2(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def train(model, loader, epochs=1):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(epochs):
        for images, labels in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()


model = Net()
flops, params = get_model_complexity_info(model, (3, 256, 256), as_strings=True, print_per_layer_stat=True)
print('Flops:  ' + flops)
print('Params: ' + params)
data = torch.utils.data.TensorDataset(torch.randn(64, 3, 256, 256), torch.randint(0, 10, (64,)))
train(model, torch.utils.data.DataLoader(data, batch_size=16))
torch.save(model, 'checkpoint.pth')

model = torch.load('checkpoint.pth')
