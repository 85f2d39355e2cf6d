"""TRN202: characters drawn from one of Python's identifier alphabets and joined into a string make a name
(a run id, a checkpoint file the same run writes and reads back), not training randomness: an unseeded
`random` drawing them leaves training reproducible. DropEdge/DropEdge's EarlyStopping._random_str (another
file, read through the project index; judged fp on the ecosystem test half at d20631c, the repository moved
to dev in 2bd057b) is this shape. Characters drawn from another population (`"ACGT"`: synthetic sequences)
and shuffled data joined into text stay draws."""

from __future__ import annotations

from project_helpers import places, run_check

SEEDED_MAIN = """\
import numpy as np
import torch

from earlystopping import EarlyStopping

np.random.seed(0)
torch.manual_seed(0)
stopper = EarlyStopping(patience=10)
model = torch.nn.Linear(3, 1)
"""

NAMING_STOPPER = """\
import os
import random
import string
import time


class EarlyStopping:
    def __init__(self, patience=7, folder="checkpoints"):
        self.patience = patience
        self.fname = os.path.join(folder, time.strftime("%H%M%S") + "-" + self._random_str() + ".pt")

    def _random_str(self, length=3):
        letters = list(string.ascii_letters)
        random.shuffle(letters)
        return "".join(letters[:length])
"""

RUN_ID = """\
import random
import string

import numpy as np
import torch

np.random.seed(0)
torch.manual_seed(0)


def run_id(n=8):
    return "-".join(["run", "".join(random.choices(string.ascii_lowercase + string.digits, k=n))])


model = torch.nn.Linear(3, 1)
print(run_id())
"""

DATA_DRAWS = """\
import random

import numpy as np
import torch

np.random.seed(0)
torch.manual_seed(0)


def sequence(n):
    return "".join(random.choice("ACGT") for _ in range(n))


def sentence(words):
    random.shuffle(words)
    return " ".join(words)


model = torch.nn.Linear(3, 1)
print(sequence(5), sentence(["a", "b"]))
"""


def test_a_checkpoint_name_drawn_in_another_file_is_not_training_randomness(tmp_path):
    (tmp_path / "earlystopping.py").write_text(NAMING_STOPPER)
    (tmp_path / "train.py").write_text(SEEDED_MAIN)
    assert run_check(tmp_path, "TRN202") == []


def test_a_run_id_drawn_from_an_alphabet_is_quiet(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(RUN_ID)
    assert run_check(path, "TRN202") == []


def test_characters_of_another_population_and_shuffled_data_stay_draws(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(DATA_DRAWS)
    assert places(run_check(path, "TRN202")) == [("TRN202", "train.py", 7)]
    path.write_text(DATA_DRAWS.replace('random.choice("ACGT") for _ in range(n)', '"A" * n'))
    assert places(run_check(path, "TRN202")) == [("TRN202", "train.py", 7)]  # the shuffle of words alone
