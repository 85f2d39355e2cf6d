"""Which seeds run in DataLoader workers (FileModel.in_worker), read from what a function does, not from its
name. A worker_init_fn reseeds from the worker's own seed (`torch.initial_seed()`, `get_worker_info()`, as
the DataLoader notes on multi-process randomness show), so its seeds are not the program's: a NumPy draw in
the main process stays unseeded even when the worker_init_fn is passed from another file. A function merely
named like a worker (`worker_loop`, `main_worker`) that seeds with the run's seed does seed the program
(until 2026-12-07 any function whose name held "worker" was taken for a worker and its seeds ignored)."""

from __future__ import annotations

import pytest

from traindoctor.config import Config
from traindoctor.lint import lint_source

CONFIG = Config(select=("strict",))

PROGRAM = """\
import random

import numpy as np
import torch


def {name}({param}):
    {seed_line}
    np.random.seed(seed)
    random.seed(seed)


def main(args):
    torch.manual_seed(args.seed)
    {call}
    noise = np.random.rand(8)
    order = random.sample(range(8), 8)
    return torch.randn(8) + torch.tensor(noise), order
"""


def _trn202(name: str, param: str, seed_line: str, call: str) -> list[int]:
    source = PROGRAM.format(name=name, param=param, seed_line=seed_line, call=call)
    return [f.to_json()["line"] for f in lint_source(source, "train.py", CONFIG).findings if f.code == "TRN202"]


@pytest.mark.parametrize("name", ["seed_worker", "init_fn"])
@pytest.mark.parametrize("seed_line", ["seed = torch.initial_seed() % 2**32",
                                       "seed = torch.utils.data.get_worker_info().seed % 2**32"])
def test_a_function_that_reseeds_from_the_workers_own_seed_does_not_seed_the_program(name, seed_line):
    # passed as worker_init_fn in another file: its seeds run in the workers, the main process's draws stay unseeded
    assert _trn202(name, "worker_id", seed_line, "pass") != []


@pytest.mark.parametrize("name", ["worker_loop", "main_worker", "set_all_seeds"])
def test_a_function_that_seeds_with_the_runs_seed_seeds_the_program_whatever_its_name(name):
    assert _trn202(name, "seed", "seed = int(seed)", f"{name}(args.seed)") == []
