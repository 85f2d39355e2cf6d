"""A tabular binary classifier (30 features): the network ends in Linear and is
trained with BCELoss through torch.squeeze; the model is moved with .to()."""
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(30, 16)
        self.fc2 = nn.Linear(16, 1)
    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = self.fc2(x)
        return x

model = Net().to("cpu")
criterion = nn.BCELoss()
optimizer = torch.optim.Adam(model.parameters())

def train(model, loader):
    for inputs, labels in loader:
        outputs = model(inputs)
        loss = criterion(torch.squeeze(outputs), labels.float())  # expect: TRN303
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
