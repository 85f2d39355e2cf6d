"""log of a value that reaches 0 gives -inf; the loop asserts the loss is finite."""
import torch

weights = torch.tensor([1.0, 0.5, 0.0], requires_grad=True)
opt = torch.optim.SGD([weights], lr=0.1)
for step in range(3):
    loss = -(torch.log(weights) * torch.tensor([0.2, 0.3, 0.5])).sum()
    assert torch.isfinite(loss), f"non-finite loss at step {step}: {loss.item()}"
    loss.backward()
    opt.step()
    opt.zero_grad()
