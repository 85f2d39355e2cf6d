"""An evaluation function without no_grad (TRN102); the fix decorates it with
`@torch.no_grad()`. Prints whether the outputs it saw carried a graph."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
loader = [(torch.randn(4, 8), torch.randint(0, 2, (4,))) for _ in range(5)]
SEEN = []


def evaluate(net, batches):
    net.eval()
    correct = 0
    for x, y in batches:
        out = net(x)  # expect: TRN102
        SEEN.append(out)
        correct += (out.argmax(1) == y).sum().item()
    net.train()
    return correct / (4 * len(batches))


print(f"acc {evaluate(model, loader):.2f}")
print("GRAPH", any(t.requires_grad for t in SEEN))
