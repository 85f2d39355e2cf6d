"""Recall mechanisms of issue 27, third pass ("flow"): facts a reviewer reads across a function's
def-use chains and the project's pins. Each test is a real program of the shape, with quiet twins;
the claims are checked against torch."""

from __future__ import annotations

import argparse
import importlib
import pickle
import subprocess
import sys

import pytest
import torch

from project_helpers import places_found_by_check, write_project
from traindoctor.config import Config
from traindoctor.lint import fix_source, lint_source

CONFIG = Config(select=("strict",))


def _lines(source: str, code: str) -> list[int]:
    return [f.range.start.line + 1 for f in lint_source(source, "t.py", CONFIG).findings if f.code == code]


# -- TRN102: a module run whose output is only ever used detached records a graph for nothing

SLIDE = '''import numpy as np
import torch
from torch import nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, x):
        return self.lin(x)

    def slide(self, chunks, postprocess=None):
        found = []
        for chunk in chunks:
            x = torch.tensor(chunk, dtype=torch.float32)
            y = self(x)
            y_npy = y.detach().to("cpu").numpy()
            if postprocess is not None:
                y_npy = postprocess(y_npy)
            found.append(y_npy)
        return np.vstack(found)


def synthesize(model, x, quantized):
    model.eval()
    y_hat = model(x)
    if quantized:
        y_hat = y_hat.max(1)[1].view(-1).cpu().data.numpy()
    else:
        y_hat = y_hat.view(-1).cpu().data.numpy()
    return y_hat / (np.abs(y_hat).max() + 1)


if __name__ == "__main__":
    scorer = Scorer()
    print(scorer.slide([np.ones((3, 4))]).shape, synthesize(scorer, torch.ones(3, 4), True).shape)
'''


def test_module_output_used_only_detached():
    # synthesize() runs one forward per call, in no loop: its graph is freed on return, and since
    # h/prec6 that shape is quiet (tests/lint/test_single_forward_after_eval.py). slide() loops.
    assert _lines(SLIDE, "TRN102") == [18]
    fixed = fix_source(SLIDE, "t.py", CONFIG)[0]
    assert "    @torch.no_grad()\n    def slide" in fixed
    assert _lines(fixed, "TRN102") == []
    namespace: dict = {"__name__": "__main__"}
    exec(compile(fixed, "t.py", "exec"), namespace)  # the fixed program runs
    # the claim: outside no_grad the run records a graph (its output has a grad_fn), under it none
    scorer = namespace["Scorer"]()
    assert scorer(torch.ones(1, 4)).grad_fn is not None
    with torch.no_grad():
        assert scorer(torch.ones(1, 4)).grad_fn is None


@pytest.mark.parametrize("change", [
    ("        return np.vstack(found)", "        return np.vstack(found), y"),  # the output leaves the function
    ("            found.append(y_npy)", "            found.append(y_npy)\n            self.last = y"),  # kept
    ("            y_npy = y.detach().to(\"cpu\").numpy()", "            y_npy = y.to(\"cpu\")"),  # history kept
    ("            y = self(x)", "            with torch.no_grad():\n                y = self(x)"),
    ("    def slide(self, chunks, postprocess=None):", "    @torch.no_grad()\n    def slide(self, chunks, postprocess=None):"),
    ("                y_npy = postprocess(y_npy)", "                y_npy = postprocess(y)"),  # a callable parameter
    # gets the output with history: it may backpropagate (a `loss_compute` that calls backward)
    ("            found.append(y_npy)", "            found.append(y_npy)\n            y.sum().backward()"),
    ("            y_npy = y.detach().to(\"cpu\").numpy()", "            y_npy = (lambda: y)().detach().numpy()"),
])
def test_module_output_used_only_detached_quiet_slide(change):
    old, new = change
    source = SLIDE.replace("    model.eval()\n", "    model.eval()\n    x.requires_grad_(True)\n")  # synthesize: quiet
    assert old in source
    assert _lines(source.replace(old, new), "TRN102") == []


@pytest.mark.parametrize("change", [
    ("    else:\n        y_hat = y_hat.view(-1).cpu().data.numpy()\n", ""),  # one path keeps the tensor
    ("    model.eval()\n", ""),  # a parameter nothing says is a module
    ("    model.eval()\n", "    model.eval()\n    model.train()\n"),  # back in train mode
    ("    y_hat = model(x)\n", "    y_hat = model(x)\n    y_hat = x\n"),  # the output is never read
    ("    y_hat = model(x)\n", "    y_hat = model(x)\n    target = model(x + 1)\n    loss = (target - x).sum()\n"
                               "    return loss\n"),  # another run's output keeps its graph: it may train
])
def test_module_output_used_only_detached_quiet_synthesize(change):
    old, new = change
    source = SLIDE.replace("            y = self(x)", "            with torch.no_grad():\n                y = self(x)")
    assert old in source
    assert _lines(source.replace(old, new), "TRN102") == []


MODELS = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        return self.lin(x)
'''

PREDICT = '''import torch

from models import Net

net = Net()


def predict(batches):
    labels = []
    for x in batches:
        labels.extend(net(torch.as_tensor(x)).argmax(1).tolist())
    return labels
'''


def test_project_model_class_run_and_detached_in_another_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "models.py").write_text(MODELS)
    (tmp_path / "predict.py").write_text(PREDICT)
    assert places_found_by_check(tmp_path, "TRN102") == [("TRN102", "predict.py", 11)]
    (tmp_path / "models.py").write_text(MODELS.replace("class Net(nn.Module):", "class Net:"))
    assert places_found_by_check(tmp_path, "TRN102") == []  # not a module: nothing says it records a graph


# -- TRN602: a file the same function loads with weights_only=False; Lightning's loaders from 2.6

LOADS = '''import torch


def restore(path, module_class):
    meta = torch.load(path, map_location="cpu", weights_only=False)
    print(sorted(meta))
    state = torch.load(path, map_location="cpu")
    model = module_class.load_from_checkpoint(path)
    return state, model
'''


def test_load_of_a_file_the_function_loads_unsafely(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\ndependencies = ['torch>=2.6', "
                                             "'lightning>=2.6']\n")
    (tmp_path / "restore.py").write_text(LOADS)
    assert places_found_by_check(tmp_path, "TRN602") == [("TRN602", "restore.py", 7), ("TRN602", "restore.py", 8)]
    # Lightning before 2.6 passes weights_only=False itself: only torch.load's default bites
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\ndependencies = ['torch>=2.6', "
                                             "'pytorch-lightning==2.5.1']\n")
    assert places_found_by_check(tmp_path, "TRN602") == [("TRN602", "restore.py", 7)]
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\ndependencies = ['torch==2.5.1']\n")
    assert places_found_by_check(tmp_path, "TRN602") == []  # torch 2.5 loads everything by default


@pytest.mark.parametrize("change", [
    ('meta = torch.load(path, map_location="cpu", weights_only=False)',
     'meta = torch.load(path + ".meta", map_location="cpu", weights_only=False)'),  # another file
    ('meta = torch.load(path, map_location="cpu", weights_only=False)',
     'meta = torch.load(path, map_location="cpu", weights_only=True)'),
])
def test_load_of_a_file_the_function_loads_unsafely_quiet(tmp_path, change):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\ndependencies = ['torch>=2.6', "
                                             "'lightning>=2.6']\n")
    (tmp_path / "restore.py").write_text(LOADS.replace(*change))
    assert places_found_by_check(tmp_path, "TRN602") == []


def test_load_fix_runs_on_a_file_with_objects(tmp_path):
    """The premise, on the installed torch (>= 2.6): a file holding objects (an argparse Namespace)
    loads with weights_only=False and is refused by the default; the offered fix loads it."""
    path = tmp_path / "ckpt.pt"
    torch.save({"args": argparse.Namespace(lr=0.1), "w": torch.ones(2)}, path)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path)
    source = "import torch\n\n\ndef restore(path):\n    meta = torch.load(path, weights_only=False)\n" \
             "    state = torch.load(path)\n    return meta, state\n"
    assert _lines(source, "TRN602") == [6]
    fixed = fix_source(source, "t.py", CONFIG, unsafe=True)[0]
    assert "torch.load(path, weights_only=False)\n    return" in fixed and _lines(fixed, "TRN602") == []
    namespace: dict = {}
    exec(compile(fixed, "t.py", "exec"), namespace)
    assert namespace["restore"](path)[1]["args"].lr == 0.1


# -- TRN602: what the loaded file holds, read from the save of the same path

SAVES = '''import argparse
from dataclasses import dataclass

import numpy as np
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args([])


@dataclass
class Stats:
    best: float = 0.0


def save(model, path):
    state = {"model": model.state_dict(), "args": args, "epoch": 3}
    torch.save(state, path)


def resume(model, path):
    checkpoint = torch.load(path)
    model.load_state_dict(checkpoint["model"])
    return checkpoint["epoch"]


def save_stats(losses, out):
    torch.save({"stats": Stats(best=1.0), "mean": np.mean(losses)}, out)


def load_stats(out):
    return torch.load(out)


def save_mean(losses, where):
    torch.save({"mean": np.mean(losses)}, where)


def load_mean(where):
    return torch.load(where)
'''


def test_load_of_a_file_saved_with_objects(tmp_path, monkeypatch):
    assert _lines(SAVES, "TRN602") == [23, 33, 41]
    fixed = fix_source(SAVES, "t.py", CONFIG, unsafe=True)[0]
    assert _lines(fixed, "TRN602") == []
    # the claims, on the installed torch: each load is refused; the fixed program loads them all
    (tmp_path / "saves_before.py").write_text(SAVES)
    (tmp_path / "saves_after.py").write_text(fixed)
    monkeypatch.syspath_prepend(str(tmp_path))
    before, after = importlib.import_module("saves_before"), importlib.import_module("saves_after")
    model = torch.nn.Linear(2, 2)
    for program in (before, after):
        program.save(model, tmp_path / "a.pt")
        program.save_stats([1.0, 2.0], tmp_path / "b.pt")
        program.save_mean([1.0, 2.0], tmp_path / "c.pt")
    for load in (lambda: before.resume(model, tmp_path / "a.pt"), lambda: before.load_stats(tmp_path / "b.pt"),
                 lambda: before.load_mean(tmp_path / "c.pt")):
        with pytest.raises(pickle.UnpicklingError):
            load()
    assert after.resume(model, tmp_path / "a.pt") == 3
    assert after.load_stats(tmp_path / "b.pt")["stats"].best == 1.0
    assert after.load_mean(tmp_path / "c.pt")["mean"] == 1.5


@pytest.mark.parametrize("change", [
    ('"args": args', '"args": vars(args)'),  # a dict of plain values
    ('{"stats": Stats(best=1.0), "mean": np.mean(losses)}', '{"stats": 1.0, "mean": float(np.mean(losses))}'),
    ('    torch.save({"mean": np.mean(losses)}, where)', '    torch.save({"mean": np.mean(losses)}, where + ".np")'),
    ('    return torch.load(where)', '    return torch.load(where, weights_only=False)'),
    ("args = parser.parse_args([])", "args = {'lr': 0.1}"),
])
def test_load_of_a_file_saved_with_objects_quiet(change):
    old, new = change
    assert old in SAVES
    found = _lines(SAVES.replace(old, new), "TRN602")
    assert len(found) == 2, found


# -- TRN101: a meter of another file that adds what it is given into its state, fed a helper's
#    result computed from a model output

METER = '''import torch


class KeepAverage:
    def __init__(self):
        self.avg_values = {}
        self.iters = {}

    def add_value(self, name, init_val=0, init_iter=0):
        self.avg_values[name] = init_val
        self.iters[name] = init_iter

    def update_value(self, name, value):
        self.avg_values[name] = self.avg_values[name] * self.iters[name] + value
        self.iters[name] += 1
        self.avg_values[name] /= self.iters[name]
'''

MEASURES = '''import torch


def alignment_score(alignments):
    return alignments.max(dim=1)[0].mean(dim=1).mean(dim=0)
'''

TRAIN_METER = '''import torch
from torch import nn

from utils.generic import KeepAverage
from utils.measures import alignment_score

model = nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train(loader):
    keep_avg = KeepAverage()
    keep_avg.add_value("score")
    for x, y in loader:
        optimizer.zero_grad()
        out = model(x)
        loss = ((out - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        score = alignment_score(out.unsqueeze(0))
        keep_avg.update_value("score", score)
    return keep_avg
'''


def _meter_project(root, meter=METER, measures=MEASURES, train=TRAIN_METER):
    write_project(root, {"utils/__init__.py": "", "utils/generic.py": meter, "utils/measures.py": measures,
                         "train.py": train})


@pytest.mark.parametrize("measures", [MEASURES, MEASURES.replace("import torch\n\n\n", "")])  # a torch-free helper file
def test_meter_of_another_file_fed_a_helper_result_with_history(tmp_path, monkeypatch, measures):
    _meter_project(tmp_path, measures=measures)
    assert places_found_by_check(tmp_path, "TRN101") == [("TRN101", "train.py", 21)]
    # the claim: the average keeps the graph of every step it was given
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("train", "utils", "utils.generic", "utils.measures"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    train = importlib.import_module("train")
    kept = train.train([(torch.randn(2, 4), torch.randn(2, 4)) for _ in range(3)])
    assert kept.avg_values["score"].grad_fn is not None
    # the fix hands the meter a detached tensor: the same numbers, no graph
    done = subprocess.run([sys.executable, "-m", "traindoctor", "check", "--fix", "--select", "TRN101", str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    fixed = (tmp_path / "train.py").read_text()
    assert 'keep_avg.update_value("score", score.detach())' in fixed, done.stdout + done.stderr
    assert places_found_by_check(tmp_path, "TRN101") == []
    monkeypatch.delitem(sys.modules, "train")
    kept = importlib.import_module("train").train([(torch.randn(2, 4), torch.randn(2, 4)) for _ in range(3)])
    assert kept.avg_values["score"].grad_fn is None


@pytest.mark.parametrize("where, change", [
    ("meter", ("self.iters[name] + value\n", "self.iters[name] + float(value)\n")),  # converted: a number
    ("meter", ("self.avg_values[name] = self.avg_values[name] * self.iters[name] + value\n",
               "self.last = value\n")),  # not accumulated: replaced every call
    ("measures", ("return alignments.max(dim=1)[0].mean(dim=1).mean(dim=0)",
                  "return alignments.max(dim=1)[0].mean(dim=1).mean(dim=0).item()")),
    ("measures", ("return alignments.max(dim=1)[0].mean(dim=1).mean(dim=0)",
                  "return alignments.argmax(dim=1)")),  # an index: no history
    ("train", ("        score = alignment_score(out.unsqueeze(0))\n",
               "        with torch.no_grad():\n            score = alignment_score(out.unsqueeze(0))\n")),
])
def test_meter_of_another_file_quiet(tmp_path, where, change):
    texts = {"meter": METER, "measures": MEASURES, "train": TRAIN_METER}
    assert change[0] in texts[where]
    texts[where] = texts[where].replace(*change)
    _meter_project(tmp_path, texts["meter"], texts["measures"], texts["train"])
    assert places_found_by_check(tmp_path, "TRN101") == []
