"""An in-place ReLU-like clamp on a tensor that sigmoid saved for backward."""
import torch

w = torch.randn(5, 5, requires_grad=True)
x = torch.randn(3, 5)
h = torch.sigmoid(x @ w)
h.mul_(2)  # modifies sigmoid's saved output in place
loss = h.sum()
loss.backward()
