import torch


def _make_pytorch_shapes_consistent(output, labels):
    """Try to make inputs have the same shape by adding dimensions of size 1."""
    shape1 = output.shape
    shape2 = labels.shape
    len1 = len(shape1)
    len2 = len(shape2)
    if len1 == len2:
        return (output, labels)
    if len1 == len2 + 1 and shape1[-1] == 1:
        return (output, labels.unsqueeze(-1))
    return (output, labels)


class Loss:
    def _create_pytorch_loss(self):
        raise NotImplementedError("Subclasses must implement this")


class PoissonLoss(Loss):
    """The Poisson loss function is defined as the mean of the elements of y_pred - (y_true * log(y_pred))."""

    def _create_pytorch_loss(self):

        def loss(output, labels):
            output, labels = _make_pytorch_shapes_consistent(output, labels)
            loss = output - labels * torch.log(output)
            return torch.mean(loss)

        return loss


class CategoricalCrossEntropy(Loss):
    """The cross entropy between pairs of probability distributions."""

    def _create_pytorch_loss(self):

        def loss(output, labels):
            output, labels = _make_pytorch_shapes_consistent(output, labels)
            return -torch.sum(labels * torch.log(output), dim=-1)

        return loss


model = torch.nn.Sequential(torch.nn.Linear(16, 4), torch.nn.Softmax(dim=-1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = CategoricalCrossEntropy()._create_pytorch_loss()
x = torch.randn(32, 16)
y = torch.nn.functional.one_hot(torch.randint(0, 4, (32,)), 4).float()
for step in range(100):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y).mean()
    loss.backward()
    optimizer.step()
