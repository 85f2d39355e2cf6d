"""Rules on the training structure (analysis/training.py): the structure itself, and
proof by running the fixtures that each fix changes what training does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest
from casefiles import CONFIG, findings_of

from traindoctor.lint import fix_source
from traindoctor.lint.analysis.collect import BlockAnalysis
from traindoctor.lint.analysis.names import Names, top_level_aliases

RUNNABLE = Path(__file__).parent / "runnable"
CODES = ("TRN701", "TRN702", "TRN703", "TRN102", "TRN706", "TRN203", "TRN505", "TRN503", "TRN404")


def _routines(source: str):
    module = cst.parse_module(source)
    facts = BlockAnalysis(module, Names(top_level_aliases(module)), source).facts
    return {r.qualname: r for r in facts.training}


def test_events_are_ordered_and_typed():
    source = ("import torch\n"
              "def train(model, loader, opt, scaler):\n"
              "    model.train()\n"
              "    for x, y in loader:\n"
              "        opt.zero_grad(set_to_none=True)\n"
              "        with torch.no_grad():\n"
              "            t = teacher(x)\n"
              "        scaler.scale(model(x, t)).backward()\n"
              "        scaler.unscale_(opt)\n"
              "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
              "        scaler.step(opt)\n"
              "        scaler.update()\n"
              "        if torch.rand(1) > 0.5:\n"
              "            torch.cuda.empty_cache()\n")
    routine = _routines(source)["train"]
    kinds = [e.kind for e in routine.events]
    assert kinds == ["train", "zero_grad", "call", "call", "scaled_backward", "unscale", "clip", "scaler_step",
                     "scaler_update", "empty_cache"]
    teacher = routine.events[2]
    assert teacher.receiver == "teacher" and teacher.no_grad and teacher.loops == (0,)
    assert routine.events[-1].conditional and not routine.events[1].conditional
    assert routine.events[7].arg == "opt"


def test_helpers_are_expanded_with_parameters_renamed():
    from traindoctor.lint.engine import LintCache  # noqa: F401  (the file model is built by the engine)
    from traindoctor.lint.api import lint_source
    source = ("import torch\n"
              "def validate(net, loader):\n"
              "    net.eval()\n"
              "def fit(model, loader, opt):\n"
              "    for epoch in range(3):\n"
              "        for x, y in loader:\n"
              "            opt.zero_grad()\n"
              "            model(x, y).backward()\n"
              "            opt.step()\n"
              "        validate(model, loader)\n")
    assert [code for code in (f.code for f in lint_source(source, "m.py", CONFIG).findings)] == ["TRN703"]


def _run(path: Path) -> str:
    ran = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=180, cwd=path.parent)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def _fixed(name: str, tmp_path: Path, unsafe: bool = False) -> tuple[str, str]:
    path = RUNNABLE / name
    fixed, applied = fix_source(path.read_text(), str(path), CONFIG, unsafe=unsafe)
    assert applied >= 1
    target = tmp_path / name
    target.write_text(fixed)
    return _run(path), _run(target)


def test_trn701_fix_stops_gradients_from_summing(tmp_path: Path):
    before, after = _fixed("trn701_missing_zero_grad.py", tmp_path)
    assert float(after) * 2 < float(before)  # summed over 60 steps vs one batch's gradient


def test_trn703_fix_trains_in_train_mode(tmp_path: Path):
    path = RUNNABLE / "trn703_eval_mode_leak.py"
    # it changes how the model behaves (dropout, BatchNorm): unsafe, not applied by --fix
    assert fix_source(path.read_text(), str(path), CONFIG)[1] == 0
    before, after = _fixed("trn703_eval_mode_leak.py", tmp_path, unsafe=True)
    assert "EVAL_STEPS 20" in before and "EVAL_STEPS 0" in after


def test_trn702_fix_lets_the_weights_move(tmp_path: Path):
    path = RUNNABLE / "trn702_zero_grad_before_step.py"
    assert fix_source(path.read_text(), str(path), CONFIG)[1] == 0  # reordering is unsafe: not applied by --fix
    before, after = _fixed("trn702_zero_grad_before_step.py", tmp_path, unsafe=True)
    assert "MOVED False" in before and "MOVED True" in after


def test_trn102_fix_stops_recording_graphs(tmp_path: Path):
    before, after = _fixed("trn102_eval_without_no_grad.py", tmp_path)
    assert "GRAPH True" in before and "GRAPH False" in after


@pytest.mark.parametrize("source, expected", [
    # zero_grad once per epoch, step every batch: gradients summed over the epoch
    ("import torch\nfor epoch in range(3):\n    optimizer.zero_grad()\n    for x in loader:\n"
     "        model(x).sum().backward()\n        optimizer.step()\n", [(5, "TRN701")]),
    # an optimizer whose in-file step() zeroes
    ("import torch\nclass Opt:\n    def step(self):\n        self.inner.step()\n        self.inner.zero_grad()\n"
     "opt = Opt()\nfor x in loader:\n    model(x).sum().backward()\n    opt.step()\n", []),
    # the optimizer handed to a function from elsewhere
    ("import torch\nfrom utils import after_step\nfor x in loader:\n    model(x).sum().backward()\n"
     "    optimizer.step()\n    after_step(optimizer)\n", []),
    # a base-class method (not in this file) may zero the gradients
    ("import torch\nfrom base import BaseTrainer\nclass T(BaseTrainer):\n    def fit(self):\n"
     "        for batch in self.loader:\n            self.model(batch).backward()\n            self.optimizer.step()\n"
     "            self.after_step()\n", []),
    # a fresh model every iteration (meta-learning, per-sample fits)
    ("import torch\nfor x in tasks:\n    net = torch.nn.Linear(2, 2)\n    opt = torch.optim.SGD(net.parameters())\n"
     "    net(x).sum().backward()\n    opt.step()\n", []),
])
def test_trn701_shapes(source, expected):
    assert findings_of(source, ("TRN701",)) == expected


def test_trn203_fix_gives_each_epoch_its_own_order(tmp_path: Path):
    before, after = _fixed("trn203_sampler_set_epoch.py", tmp_path)
    assert "ORDERS SAME" in before and "ORDERS DIFFER" in after


def test_trn404_fixes_step_with_unscaled_gradients(tmp_path: Path):
    before, after = _fixed("trn404_grad_scaler.py", tmp_path)
    assert float(before) > 5 * float(after)  # the direct step applied gradients x1024


def test_trn503_fix_keeps_the_result(tmp_path: Path):
    before, after = _fixed("trn503_host_transfer.py", tmp_path)
    assert before == after


@pytest.mark.parametrize("source, expected", [
    # helpers: a training function that calls model.train() itself keeps the mode right
    ("import torch\ndef train_epoch(m, loader, opt):\n    m.train()\n    for x in loader:\n        opt.zero_grad()\n"
     "        m(x).sum().backward()\n        opt.step()\n"
     "def fit(model, loaders, opt):\n    for epoch in range(3):\n        train_epoch(model, loaders[0], opt)\n"
     "        model.eval()\n", []),
    # an evaluation helper in another module: its mode switch is unknown
    ("import torch\nfrom engine import evaluate\ndef fit(model, loader, opt):\n    model.train()\n"
     "    for epoch in range(3):\n        for x in loader:\n            opt.zero_grad()\n"
     "            model(x).sum().backward()\n            opt.step()\n        model.eval()\n"
     "        evaluate(model)\n", []),
    # the same without the foreign helper: the leak is certain
    ("import torch\ndef fit(model, loader, opt):\n    model.train()\n"
     "    for epoch in range(3):\n        for x in loader:\n            opt.zero_grad()\n"
     "            model(x).sum().backward()\n            opt.step()\n        model.eval()\n", [(9, "TRN703")]),
])
def test_trn703_shapes(source, expected):
    assert findings_of(source, ("TRN703",)) == expected


def test_rules_reading_training_rerun_only_when_training_facts_change():
    from traindoctor.lint.engine import LintCache, lint_blocks

    head = "import torch\n\ndef helper(x):\n    return x + 1\n\n"
    loop = "for x, y in loader:\n    loss = criterion(model(x), y)\n    loss.backward()\n    optimizer.step()\n"
    cache = LintCache()
    lint_blocks(head + loop, "m.py", CONFIG, cache)
    cache.runs = []
    lint_blocks(head.replace("x + 1", "x + 2") + loop, "m.py", CONFIG, cache)
    assert cache.runs.count("TRN701") == 1  # only the edited block: the loop block's result is reused
    cache.runs = []
    edited = loop.replace("    loss.backward", "    optimizer.zero_grad()\n    loss.backward")
    lint_blocks(head.replace("x + 1", "x + 2") + edited, "m.py", CONFIG, cache)
    assert cache.runs.count("TRN701") == 3  # the training facts changed: every block reading them runs again


def test_trn701_zeroing_helper_from_another_module():
    source = ("import torch\nfrom .fp16_util import zero_grad\nclass Loop:\n    def run_step(self, batch):\n"
              "        zero_grad(self.model_params)\n        self.model(batch).backward()\n        self.opt.step()\n"
              "    def run(self):\n        while True:\n            self.run_step(next(self.data))\n")
    assert findings_of(source, ("TRN701",)) == []
