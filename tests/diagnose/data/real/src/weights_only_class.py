"""A checkpoint that pickles a config object; torch >= 2.6 loads with weights_only=True."""
import dataclasses

import torch


@dataclasses.dataclass
class TrainConfig:
    lr: float = 1e-3
    epochs: int = 10


torch.save({"config": TrainConfig(), "weights": torch.zeros(3)}, "ckpt.pt")
state = torch.load("ckpt.pt")
