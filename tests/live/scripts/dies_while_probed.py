"""The process dies while traindoctor reads it (a tensor subclass exits on inspection)."""
import os

import torch


class Fragile(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.isnan:
            os._exit(7)
        return super().__torch_function__(func, types, args, kwargs or {})


fragile = torch.randn(3).as_subclass(Fragile)
fragile.sum()
torch.randn(4, 4) @ torch.randn(5, 2)
