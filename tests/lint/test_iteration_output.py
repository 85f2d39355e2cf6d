"""TRN102 (issue 27, d-batch dev miss): a model run after the iteration's last backward and optimizer
step, outside no_grad, whose output only serves the rest of the iteration (a sample handed to a
logging helper of another file) records an autograd graph that nothing backpropagates. The output
is followed along def-use chains and through containers bound in the loop
(analysis/iteration_output.py); the helper is known through the project index. The claim (the run
records a graph, no_grad records none) is checked against torch."""

from __future__ import annotations

import pytest
import torch
from project_helpers import places_found_by_check, run_check, write_project

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


def _project(tmp_path, train: str = TRAIN, utils: str = UTILS):
    return write_project(tmp_path, {"utils.py": utils, "train.py": train}, pyproject=None)


def test_a_sample_generated_after_the_step_for_the_logs(tmp_path):
    assert places_found_by_check(_project(tmp_path), "TRN102", "--jobs", "1") == [("TRN102", "train.py", 14)]
    assert "after this iteration's last backward and optimizer step," in run_check(_project(tmp_path), "TRN102")[0]["message"]


def test_the_message_names_only_what_the_iteration_does(tmp_path):
    # an adversarial attack's loop: a backward for the input's gradient, no optimizer step (the FGSM tutorial)
    attack = TRAIN.replace("        optimizer.step()\n", "")
    found = run_check(_project(tmp_path, train=attack), "TRN102")
    assert [f["line"] for f in found] == [13]
    assert "after this iteration's last backward," in found[0]["message"]


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
    assert places_found_by_check(_project(tmp_path, train), "TRN102", "--jobs", "1") == []


def test_a_helper_that_backpropagates_what_it_gets(tmp_path):
    trains = UTILS.replace("        writer.add_audio(key, torch.as_tensor(value).float(), global_step)",
                           "        value.sum().backward()")
    assert trains != UTILS
    assert places_found_by_check(_project(tmp_path, utils=trains), "TRN102", "--jobs", "1") == []
    # a helper of the same file that backpropagates what it is given
    local = TRAIN.replace("from utils import summarize\n", "\n\ndef summarize(writer, step, scalars, audios):\n"
                          "    audios['gen'].sum().backward()\n")
    assert places_found_by_check(_project(tmp_path, local), "TRN102", "--jobs", "1") == []


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
