"""TRN202: a project function that only returns what it draws (`return np.random.randint(...)`), called
where every call's value becomes a seed (`torch_seed = gen_seeds(); torch.manual_seed(torch_seed)`, logged),
draws the choice of the seed, not randomness the seed leaves uncontrolled: with the same seed nothing is
drawn. klicperajo/ppnp's training.py:41 (gen_seeds in preprocessing.py; judged fp at the repository's first
test-half lint at 9d36932, the repository moved to dev) is this shape; the same-file form is
analysis/seed_draws.py's (PixArt's Gradio seeds). The summary field is `returned_draws`. Another function of
the same module that draws, or a call whose value is computed with, stays reported."""

from __future__ import annotations

from project_helpers import places, run_check

PREP = """\
import numpy as np


def gen_seeds(size=None):
    return np.random.randint(2 ** 32, size=size, dtype=np.uint32)


def noisy(x):
    return x + np.random.randn(*x.shape)
"""

SEEDED_WITH_A_DRAWN_SEED = """\
import logging

import torch

from prep import gen_seeds


def train(torch_seed=None):
    if torch_seed is None:
        torch_seed = gen_seeds()
    torch.manual_seed(seed=torch_seed)
    logging.info(f"seed {torch_seed}")
    return torch.nn.Linear(2, 2)
"""

ALSO_DRAWS_DATA = """\
import torch

from prep import gen_seeds, noisy


def train(x):
    torch.manual_seed(int(gen_seeds()))
    return noisy(x)
"""

COMPUTES_WITH_THE_DRAW = """\
import torch

from prep import gen_seeds


def train(x):
    torch.manual_seed(0)
    return x * float(gen_seeds())
"""


def _project(tmp_path, train: str):
    (tmp_path / "prep.py").write_text(PREP)
    (tmp_path / "train.py").write_text(train)
    return run_check(tmp_path, "TRN202")


def test_a_seed_drawn_by_another_file_s_function_is_not_uncontrolled_randomness(tmp_path):
    assert _project(tmp_path, SEEDED_WITH_A_DRAWN_SEED) == []


def test_another_draw_of_that_module_or_a_draw_computed_with_stays_reported(tmp_path):
    assert places(_project(tmp_path, ALSO_DRAWS_DATA)) == [("TRN202", "train.py", 7)]
    assert places(_project(tmp_path, COMPUTES_WITH_THE_DRAW)) == [("TRN202", "train.py", 7)]
