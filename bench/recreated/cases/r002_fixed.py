import torch
import torch.nn as nn
import torch.nn.functional as F


class CNN(nn.Module):
    def __init__(self, in_channels=20, num_classes=3):
        super().__init__()
        self.conv1 = nn.Conv1d(in_channels, 32, kernel_size=5, padding=2)
        self.conv2 = nn.Conv1d(32, 64, kernel_size=5, padding=2)
        self.pool = nn.AdaptiveMaxPool1d(1)
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = self.pool(x).squeeze(-1)
        logits = self.fc(x)
        return logits


def train(model, train_loader, epochs=10, lr=1e-3):
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for epoch in range(epochs):
        model.train()
        running_loss = 0.0
        for seqs, labels in train_loader:
            optimizer.zero_grad()
            output = model(seqs)
            loss = loss_fn(output, labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
        print(f"epoch {epoch}: loss {running_loss / len(train_loader):.4f}")


if __name__ == "__main__":
    data = torch.utils.data.TensorDataset(torch.randn(256, 20, 50), torch.randint(0, 3, (256,)))
    train(CNN(), torch.utils.data.DataLoader(data, batch_size=32, shuffle=True))
