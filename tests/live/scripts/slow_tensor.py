"""A frame full of large tensors: the tensors probe reads them for seconds and times out.

Sixteen views of one 16M-element tensor (each just under the probe's size limit, each a
separate tensor to read), on one thread: reading their NaN/inf counts and ranges takes
several seconds, far past the test's 0.5 s probe timeout. No user code runs in the probe."""
import torch

torch.set_num_threads(1)
activations = torch.randn(16_000_000 - 1)
globals().update({f"layer{i}": activations.view(-1) for i in range(16)})
weights = torch.randn(4, 4)
weights @ torch.randn(5, 2)
