"""A training file that names no torch: the loss comes from a project helper (`compute_loss` in losses.py)
and the file only calls `backward()`, `step()` and sums the loss. With the project's facts it is linted
(TRN101 finds the running sum that keeps every step's graph); without them a file that never names torch
is still skipped, as before. Checked on torch: the sum carries a graph."""

from __future__ import annotations

import torch
from torch import nn

from project_helpers import lines_found_in_project
from traindoctor.config import Config
from traindoctor.lint import lint_source

LOSSES = '''\
import torch.nn.functional as F


def compute_loss(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)
'''

TRAIN = '''\
from losses import compute_loss


def train(model, opt, loader):
    epoch_loss = 0.0
    for batch in loader:
        loss = compute_loss(model, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        epoch_loss += loss
    return epoch_loss
'''


def test_a_torch_free_training_file_is_linted_with_its_project(tmp_path) -> None:
    assert lines_found_in_project(tmp_path, {"losses.py": LOSSES, "train.py": TRAIN}, "TRN101") == [11]
    namespace: dict = {}
    exec(compile(LOSSES, "losses.py", "exec"), namespace)
    train_namespace = {"compute_loss": namespace["compute_loss"]}
    exec(compile(TRAIN.split("\n", 1)[1], "train.py", "exec"), train_namespace)
    model = nn.Linear(4, 3)
    total = train_namespace["train"](model, torch.optim.SGD(model.parameters(), lr=0.1),
                                     [(torch.randn(2, 4), torch.tensor([0, 2]))] * 3)
    assert total.grad_fn is not None  # the running sum holds the graph of every step


def test_without_the_project_a_torch_free_file_is_skipped() -> None:
    assert lint_source(TRAIN, "train.py", Config(select=("TRN101",))).findings == ()


def test_a_torch_free_file_the_parser_refuses_stays_silent_in_its_project(tmp_path) -> None:
    broken = TRAIN + "\ndef oops(:\n    pass\n"  # a syntax error in a file that never names torch
    assert lines_found_in_project(tmp_path, {"losses.py": LOSSES, "train.py": broken}, "TRN000") == []
    result = lint_source("import torch\n" + broken, "train.py", Config(select=("TRN101",)))
    assert result.error is not None and "syntax error" in result.error  # a torch file still says so


MIXED_INDENT = "def play(env, n):\n    for t in range(n):\n\t    env.step(0)\n"  # a tab, then spaces: Python accepts it


def test_a_torch_free_file_libcst_refuses_stays_silent_in_its_project(tmp_path) -> None:
    compile(MIXED_INDENT, "utils.py", "exec")  # Python's own parser takes it; libcst's tokenizer does not
    files = {"losses.py": LOSSES, "train.py": TRAIN, "utils.py": MIXED_INDENT}
    assert lines_found_in_project(tmp_path, files, "TRN000", target="utils.py") == []
