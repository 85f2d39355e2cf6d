from typing import Tuple

import torch
from torch import Tensor, nn


class MultiInputSequential(nn.Module):
    """A variation of nn.Sequential, that allows the first module in the sequence accepts
    multiple inputs. To be used internally by _split_module
    """

    def __init__(self, *modules: nn.Module) -> None:
        super().__init__()
        self.modules_list = modules

    def forward(self, *inputs: Tuple[Tensor]) -> Tensor:  # type: ignore
        input = self.modules_list[0](*inputs)
        for module in self.modules_list[1:]:
            input = module(input)
        return input


class Add(nn.Module):
    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        return a + b


stage = MultiInputSequential(Add(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
optimizer = torch.optim.SGD(stage.parameters(), lr=0.1)
out = stage(torch.randn(8, 16), torch.randn(8, 16))
out.sum().backward()
optimizer.step()
