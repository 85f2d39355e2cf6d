import torch
import torch.nn as nn
import torch.utils.data as td

features = ['CulmenLength', 'CulmenDepth', 'FlipperLength', 'BodyMass']
penguin_classes = ['Adelie', 'Gentoo', 'Chinstrap']

x_train, y_train = torch.randn(240, 4), torch.randint(0, 3, (240,))
x_test, y_test = torch.randn(100, 4), torch.randint(0, 3, (100,))
train_loader = td.DataLoader(td.TensorDataset(x_train, y_train), batch_size=20, shuffle=False, num_workers=1)
test_loader = td.DataLoader(td.TensorDataset(x_test, y_test), batch_size=20, shuffle=False, num_workers=1)

# Number of hidden layer nodes
hl = 10


# Define the neural network
class PenguinNet(nn.Module):
    def __init__(self):
        super(PenguinNet, self).__init__()
        self.fc1 = nn.Linear(len(features), hl)
        self.fc2 = nn.Linear(hl, hl)
        self.fc3 = nn.Linear(hl, len(penguin_classes))

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        x = self.fc3(x)
        return x


def train(model, data_loader, optimizer):
    # Set the model to training mode
    model.train()
    train_loss = 0

    for batch, tensor in enumerate(data_loader):
        data, target = tensor
        # feedforward
        optimizer.zero_grad()
        out = model(data)
        loss = loss_criteria(out, target)
        train_loss += loss.item()

        # backpropagate
        loss.backward()
        optimizer.step()

    # Return average loss
    avg_loss = train_loss / (batch + 1)
    print('Training set: Average loss: {:.6f}'.format(avg_loss))
    return avg_loss


model = PenguinNet()
loss_criteria = nn.CrossEntropyLoss()
learning_rate = 0.001
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
optimizer.zero_grad()

epochs = 50
for epoch in range(1, epochs + 1):
    print('Epoch: {}'.format(epoch))
    train_loss = train(model, train_loader, optimizer)
