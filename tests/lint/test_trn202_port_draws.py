"""TRN202: a draw that picks a free port for the process group (`port = random.randint(...)`,
`os.environ["MASTER_PORT"] = ...`, `init(port=...)`) is not training randomness. Until 2026-12-07 a draw
was excused whenever its statement's text held "port", so `support = random.sample(classes, k)` (a few-shot
episode), `proportion = random.random()` or a `report` were excused too: where the value goes decides now,
a target or keyword with `port` as one of its words."""

from __future__ import annotations

from project_helpers import places, run_check

HEADER = """\
import os
import random

import numpy as np
import torch

np.random.seed(0)
torch.manual_seed(0)
"""


def test_a_free_port_is_not_training_randomness(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(HEADER + """\
port = random.randint(20000, 30000)
os.environ["MASTER_PORT"] = str(random.randint(20000, 30000))
masterPort = random.randint(20000, 30000)


def launch(init):
    init(port=random.randint(20000, 30000))
""")
    assert run_check(path, "TRN202") == []


def test_a_few_shot_support_set_or_a_proportion_is_a_draw(tmp_path):
    path = tmp_path / "train.py"
    for body in ("support = random.sample(list(range(10)), 5)\n", "proportion = random.random()\n",
                 "report = {'sampled': random.choice([1, 2])}\n"):
        path.write_text(HEADER + body)
        assert places(run_check(path, "TRN202")) == [("TRN202", "train.py", 8)], body
