"""TRN102 (issue 27, d-batch dev miss): a model run after the iteration's last backward and optimizer
step, outside no_grad, whose output only serves the rest of the iteration (a sample handed to a
logging helper of another file) records an autograd graph that nothing backpropagates. The output
is followed along def-use chains and through containers bound in the loop
(analysis/iteration_output.py); the helper is known through the project index. The claim (the run
records a graph, no_grad records none) is checked against torch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

UTILS = '''import torch


def summarize(writer, global_step, scalars=None, audios=None):
    for key, value in (scalars or {}).items():
        writer.add_scalar(key, value, global_step)
    for key, value in (audios or {}).items():
        writer.add_audio(key, torch.as_tensor(value).float(), global_step)
'''

TRAIN = '''import torch
from utils import summarize


def train(net, optimizer, loader, writer, sample):
    net.train()
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(net(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            audio = {}
            out = net.infer(sample)
            audio.update({"gen": out[0]})
            summarize(writer, step, scalars={"loss": loss.item()}, audios=audio)
'''


def _check(root) -> list[tuple[str, str, int]]:
    done = subprocess.run([sys.executable, "-m", "traindoctor", "check", "--format", "json", "--select", "TRN102",
                           "--jobs", "1", str(root)], capture_output=True, text=True, cwd=root, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    return sorted((f["code"], f["path"].rsplit("/", 1)[-1], f["line"]) for f in json.loads(done.stdout))


def _project(tmp_path, train: str = TRAIN, utils: str = UTILS):
    (tmp_path / "utils.py").write_text(utils)
    (tmp_path / "train.py").write_text(train)
    return tmp_path


def test_a_sample_generated_after_the_step_for_the_logs(tmp_path):
    assert _check(_project(tmp_path)) == [("TRN102", "train.py", 14)]


@pytest.mark.parametrize("change", [
    # the fix: the sample under no_grad
    ("            out = net.infer(sample)\n            audio.update",
     "            with torch.no_grad():\n                out = net.infer(sample)\n            audio.update"),
    # the output is carried into the next iteration (read before the call)
    ("        loss = torch.nn.functional.mse_loss(net(x), y)",
     "        loss = torch.nn.functional.mse_loss(net(x), y) + (out.mean() if step else 0)"),
    # kept past the iteration: in a list bound before the loop
    ("            audio = {}\n", "            audio = samples\n"),
    # a later backward in the iteration may use it
    ("            summarize(writer, step", "            net.infer(x).mean().backward()\n            summarize(writer, step"),
])
def test_a_sample_generated_after_the_step_quiet(tmp_path, change):
    old, new = change
    assert old in TRAIN
    train = TRAIN.replace(old, new).replace("    net.train()\n", "    net.train()\n    samples = {}\n    out = None\n")
    assert _check(_project(tmp_path, train)) == []


def test_a_helper_that_backpropagates_what_it_gets(tmp_path):
    trains = UTILS.replace("        writer.add_audio(key, torch.as_tensor(value).float(), global_step)",
                           "        value.sum().backward()")
    assert trains != UTILS
    assert _check(_project(tmp_path, utils=trains)) == []
    # a helper of the same file that backpropagates what it is given
    local = TRAIN.replace("from utils import summarize\n", "\n\ndef summarize(writer, step, scalars, audios):\n"
                          "    audios['gen'].sum().backward()\n")
    assert _check(_project(tmp_path, local)) == []


def test_a_run_after_the_step_records_a_graph_on_the_installed_torch():
    net = torch.nn.Linear(3, 2)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(4, 3)
    net(x).pow(2).mean().backward()
    optimizer.step()
    out = net(x)
    assert out.grad_fn is not None and out.requires_grad  # a graph, holding what backward would need
    with torch.no_grad():
        assert net(x).grad_fn is None
