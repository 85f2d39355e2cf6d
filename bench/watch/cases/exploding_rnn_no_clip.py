"""A vanilla tanh RNN on long sequences, trained with SGD and no gradient clipping. Most steps are
fine, but now and then the gradient norm jumps by orders of magnitude (exploding gradients
through 80 time steps) and the loss jumps with it."""
import torch
from torch import nn

torch.manual_seed(18)
seq, batch, d, hidden = 80, 16, 4, 64


class RNNRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(d, hidden, batch_first=True)
        self.out = nn.Linear(hidden, 1)
        with torch.no_grad():  # "identity-like" recurrent init, scaled up
            self.rnn.weight_hh_l0.copy_(torch.eye(hidden) * 1.3 + 0.05 * torch.randn(hidden, hidden))

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.out(out[:, -1])


model = RNNRegressor()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
criterion = nn.MSELoss()
for step in range(300):
    x = torch.randn(batch, seq, d)
    y = x[:, :10, 0].sum(1, keepdim=True)  # depends on the start of the sequence
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    if step % 25 == 0:
        print(f"step {step}: loss {loss.item():.4g}")
