"""A character LSTM trained with truncated backpropagation through time: the hidden state is
carried across batches and detached at each one, as it should be."""
import torch
from torch import nn

torch.manual_seed(33)
vocab, seq_len, batch = 30, 20, 16
pattern = torch.arange(vocab).repeat(200)  # a text with structure to learn
starts = torch.randint(0, vocab, (batch,))
text = torch.stack([pattern[s:s + 150 * seq_len + 1] for s in starts.tolist()])


class CharLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, 32)
        self.lstm = nn.LSTM(32, 64, batch_first=True)
        self.head = nn.Linear(64, vocab)

    def forward(self, x, state):
        out, state = self.lstm(self.embed(x), state)
        return self.head(out), state


model = CharLSTM()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
criterion = nn.CrossEntropyLoss()
state = None
for step in range(150):
    x = text[:, step * seq_len:(step + 1) * seq_len]
    y = text[:, step * seq_len + 1:(step + 1) * seq_len + 1]
    if state is not None:
        state = tuple(s.detach() for s in state)
    logits, state = model(x, state)
    loss = criterion(logits.reshape(-1, vocab), y.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    if step % 25 == 0:
        print(f"step {step}: loss {loss.item():.3f}")
