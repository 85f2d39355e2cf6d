"""Shapes met in wild batch 9's tuning half (h/diag8), each with a quiet twin: a compiled Cython
frame (numpy.random's mtrand.pyx) is library code, not the user frame; load_state_dict's key list
pasted without its header is a checkpoint mismatch; a report that the run or a unit of it (an epoch,
a step, a task) "was killed" is the OOM killer; "hang" inside "change" speaks of no hang. The pastes are made here (by running the program
where one can), so that the wild corpus stays unseen data."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import torch

from traindoctor.diagnose import diagnose_text, evidence_model
from traindoctor.diagnose.normalize import normalize
from traindoctor.diagnose.parse import parse_chains
from traindoctor.diagnose.user_frame import is_user_path
from traindoctor.monitor.curves import diagnose_curves


def _diagnose(text: str):
    return diagnose_curves(text, diagnose_text(text, correlate=False))


# --- a compiled Cython frame is not the user's --------------------------------------------------

def test_numpy_cython_frames_are_not_the_user_frame(tmp_path) -> None:
    script = tmp_path / "resample.py"
    script.write_text(textwrap.dedent("""\
        import numpy as np
        def resample(points, n):
            extra = np.random.randint(len(points), size=n - len(points))
            return extra
        resample([1, 2, 3], 2)
        """))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert ".pyx" in run.stderr, run.stderr  # numpy prints its Cython frames, relative to its build
    location = diagnose_text(run.stderr, correlate=False).location
    assert location is not None
    assert (location.path, location.line) == (str(script), 3)


def test_a_cython_file_of_the_users_own_is_still_theirs() -> None:
    assert is_user_path("/home/u/proj/fastops.pyx")
    assert is_user_path("C:\\proj\\fastops.pyx")
    assert not is_user_path("numpy/random/mtrand.pyx") and not is_user_path("mtrand.pyx")


# --- load_state_dict's key list without its header -------------------------------------------

def _key_error_message() -> str:
    saved = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8))).state_dict()
    try:
        torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8)).load_state_dict(saved)
    except RuntimeError as error:
        return str(error)
    raise AssertionError("the load did not fail")


def test_the_key_list_of_a_load_state_dict_error_without_its_header() -> None:
    message = _key_error_message()
    assert 'Unexpected key(s) in state_dict: "module.0.weight", "module.0.bias"' in message
    # a thread's fragment: the middle of the list, its header and the exception line cut away
    fragment = message.split("Unexpected key(s) in state_dict: ", 1)[1]
    assert "state_dict" not in fragment and "Error" not in fragment
    assert _diagnose(fragment).kind == "checkpoint-mismatch"


def test_printed_keys_and_a_safetensors_index_are_not_a_key_error() -> None:
    keys = list(torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8)).state_dict().keys())
    printed = f"odict_keys({keys})\nepoch 1 loss 0.41\n"  # print(model.state_dict().keys()): single quotes
    assert _diagnose(printed).kind == "other"
    index = ('{\n  "weight_map": {\n    "model.layers.0.mlp.down_proj.weight": "model-00001-of-00002.safetensors",\n'
             '    "model.layers.0.mlp.gate_proj.weight": "model-00001-of-00002.safetensors",\n'
             '    "model.layers.0.mlp.up_proj.weight": "model-00001-of-00002.safetensors"\n  }\n}\n')
    assert _diagnose(index).kind == "other"


# --- "X was killed", X the run or a unit of it ------------------------------------------------

def test_a_report_that_an_epoch_was_killed_is_the_oom_killer() -> None:
    text = "Training on a 4090 with the default config: the first epoch was killed at 59%.\n![Image](https://x/1.png)\n"
    assert _diagnose(text).kind == "host-oom"


def test_killing_a_finished_run_oneself_is_not_a_failure() -> None:
    text = "Training finished after 300 epochs (loss 0.012), then I killed the tmux session.\n"
    assert _diagnose(text).kind == "other"
    assert _diagnose("Epoch 3: loss 0.2\nThe character was killed in the second act of the story\n").kind == "other"
    bus = "DataLoader worker (pid 4211) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory.\n"
    assert _diagnose(bus).kind == "dataloader-worker"


# --- "hang" is a word, not a piece of "change" ----------------------------------------------------

def _observe(text: str) -> dict[str, str]:
    lines = normalize(text)
    return evidence_model.observe(lines, parse_chains(lines))


def test_torchs_change_the_call_warning_speaks_of_no_hang(tmp_path) -> None:
    script = tmp_path / "attack.py"
    script.write_text("import torch\nimport torch.nn.functional as F\nF.softmax(torch.randn(2, 3))\nprint('loaded')\n")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    log = run.stderr + run.stdout
    assert "Change the call to include dim=X" in log, log
    assert "msg-timeout" not in _observe(log)
    assert _diagnose(log).kind == "other"


def test_a_warning_that_a_rank_hangs_still_speaks_of_a_hang() -> None:
    log = "epoch 3 loss 0.51\nWARNING: rank 2 hangs in all_reduce, the others wait\n"
    assert "msg-timeout" in _observe(log)
