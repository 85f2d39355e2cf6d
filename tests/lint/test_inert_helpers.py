"""TRN703 through an in-file helper that cannot switch modes (issue 27, bench/bugs f011): a trainer
that calls `self.model.eval()` at the top of every epoch and then trains, with only a checkpoint
helper of the same file (`save_checkpoint(self.model, ...)`) receiving the model. Before, any call
that received the model and had no training events of its own counted as "may do anything", so the
rule stayed quiet. A helper whose code never says train/eval/apply and hands its parameters only
to torch or the builtins cannot put the model back in train mode.

Still quiet: a helper that calls `.train()` on what it is given, and one that hands the model to a
function of another module (its effect is not read here). The claim is checked on torch: after
`eval()`, dropout is off during the training steps."""

from __future__ import annotations

import torch

from traindoctor.config import Config
from traindoctor.lint import lint_source

CONFIG = Config()

TRAINER = '''import os
import torch
from torch import nn


class Trainer:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Linear(4, 1))
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.loader = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(2)]
        self.modes = []

    def train(self, epochs, folder):
        for epoch in range(epochs):
            self.model.eval()
            for x, y in self.loader:
                loss = (self.model(x) - y).pow(2).mean()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                self.modes.append(self.model.training)
            save_checkpoint(self.model, folder)


def save_checkpoint(model, folder):
    torch.save(model.state_dict(), os.path.join(folder, "model.pth"))
'''


def _lines(source: str) -> list[int]:
    return [f.range.start.line + 1 for f in lint_source(source, "train.py", CONFIG).findings if f.code == "TRN703"]


def test_eval_before_training_with_a_checkpoint_helper_is_reported(tmp_path):
    assert _lines(TRAINER) == [15]
    namespace: dict = {}
    exec(compile(TRAINER, "train.py", "exec"), namespace)
    trainer = namespace["Trainer"]()
    trainer.train(2, str(tmp_path))
    assert trainer.modes == [False] * 4  # every training step ran in eval mode (dropout off)
    assert (tmp_path / "model.pth").exists()
    assert torch.is_grad_enabled()


def test_quiet_where_the_helper_may_switch_the_mode():
    restores = TRAINER.replace('    torch.save(model.state_dict(), os.path.join(folder, "model.pth"))\n',
                               '    torch.save(model.state_dict(), os.path.join(folder, "model.pth"))\n'
                               '    model.train()\n')
    assert _lines(restores) == []
    elsewhere = TRAINER.replace("import os\n", "import os\nfrom checkpoints import archive\n").replace(
        '    torch.save(model.state_dict(), os.path.join(folder, "model.pth"))\n',
        '    archive(model, folder)\n')
    assert _lines(elsewhere) == []
