"""TRN703 through another file: `evaluate(model, loader)` in utils.py puts the model in eval mode (its
summary's `param_modes`), and train.py calls it inside the epoch loop after a single `model.train()` before
it. Every later epoch trains with dropout off. Checked on torch: the model is in eval mode during the second
epoch's steps, and after the fix (`model.train()` at the top of each epoch) it is in train mode.

Quiet where the helper switches the model back, where it trains (backward: it may do anything to the
module), and where it hands the model on to a function of another module."""

from __future__ import annotations

import subprocess
import sys

from project_helpers import index_of, lines_found_in_project, write_project
from traindoctor.config import Config
from traindoctor.lint import lint_source
from traindoctor.lint.api import apply_fixes
from traindoctor.lint.project import summarize_source

UTILS = '''\
import torch


def evaluate(model, batches):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in batches:
            total += (model(x).argmax(1) == y).float().mean().item()
    return total / max(len(batches), 1)
'''

TRAIN = '''\
import torch
import torch.nn.functional as F
from utils import evaluate


def main(model, opt, batches, modes):
    model.train()
    for epoch in range(2):
        for x, y in batches:
            modes.append(model.training)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        evaluate(model, batches)


if __name__ == "__main__":
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 2))
    seen = []
    main(net, torch.optim.SGD(net.parameters(), lr=0.1), [(torch.randn(3, 4), torch.tensor([0, 1, 0]))], seen)
    print(seen)
'''


def _modes(root) -> str:
    done = subprocess.run([sys.executable, "train.py"], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_helper_of_another_file_leaves_the_model_in_eval_mode(tmp_path) -> None:
    assert lines_found_in_project(tmp_path, {"utils.py": UTILS, "train.py": TRAIN}, "TRN703") == [15]
    assert _modes(tmp_path) == "[True, False]"  # the second epoch trained in eval mode


def test_the_fix_runs_and_trains_every_epoch_in_train_mode(tmp_path) -> None:
    root = write_project(tmp_path, {"utils.py": UTILS, "train.py": TRAIN})
    index = index_of([root / "utils.py", root / "train.py"])
    result = lint_source(TRAIN, str(root / "train.py"), Config(select=("TRN703",)), project=index)
    fixed = apply_fixes(TRAIN, [f for f in result.findings if f.fix is not None], safe_only=False)
    assert fixed != TRAIN
    (root / "train.py").write_text(fixed)
    assert _modes(root) == "[True, True]"


def test_quiet_when_the_helper_switches_back(tmp_path) -> None:
    utils = UTILS.replace("    return total", "    model.train()\n    return total")
    assert lines_found_in_project(tmp_path, {"utils.py": utils, "train.py": TRAIN}, "TRN703") == []


def test_quiet_when_the_helper_trains(tmp_path) -> None:
    utils = UTILS.replace("    return total", "    model(x).sum().backward()\n    return total")
    assert lines_found_in_project(tmp_path, {"utils.py": utils, "train.py": TRAIN}, "TRN703") == []


def test_quiet_when_the_helper_hands_the_model_on(tmp_path) -> None:
    utils = "from hooks import report\n" + UTILS.replace("    return total", "    report(model)\n    return total")
    files = {"hooks.py": "def report(model):\n    print(model)\n", "utils.py": utils, "train.py": TRAIN}
    assert lines_found_in_project(tmp_path, files, "TRN703") == []


def test_the_summary_names_the_switched_parameter() -> None:
    summary = summarize_source("utils.py", UTILS)
    evaluate = next(f for f in summary.functions if f.qualname == "evaluate")
    assert evaluate.param_modes == (("eval", "model"),)


def test_quiet_when_a_wrapper_built_from_the_model_is_put_back_in_train_mode(tmp_path) -> None:
    train = TRAIN.replace("    model.train()\n    for epoch in range(2):\n        for x, y in batches:\n",
                          "    compiled = torch.compile(model)\n    for epoch in range(2):\n        for x, y in batches:\n"
                          "            compiled.train()\n")
    assert "compiled.train()" in train
    assert lines_found_in_project(tmp_path, {"utils.py": UTILS, "train.py": train}, "TRN703") == []
    assert _modes(tmp_path) == "[True, True]"  # the wrapper's train() sets the wrapped module's mode
