"""Full-batch training that records the loss each epoch with `final_loss.append(loss)`: the list
holds every epoch's loss tensor, and with it every epoch's graph and saved activations."""
import torch
from torch import nn

torch.manual_seed(4)
X_train = torch.randn(512, 30)
y_train = (X_train[:, 0] * X_train[:, 1] > 0).long()


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(30, 128)
        self.fc2 = nn.Linear(128, 128)
        self.out = nn.Linear(128, 2)

    def forward(self, x):
        return self.out(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


model = Model()
loss_function = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
epochs = 600
final_loss = []
for i in range(epochs):
    y_pred = model.forward(X_train)
    loss = loss_function(y_pred, y_train)
    final_loss.append(loss)
    if i % 100 == 1:
        print(f"Epoch number: {i} and the loss: {loss.item()}")
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
