"""TRN203 where the shuffling DistributedSampler is built on one path only, or in the class's `__init__`:

- `sampler = DistributedSampler(ds) if args.distributed else None`, returned beside the loader and dropped
  by the caller (`train_loader, _ = get_loaders(...)`): distributed runs see one order every epoch. The fix
  tests for `set_epoch`, so that the non-distributed path (a RandomSampler) still runs;
- `self.loader = DataLoader(ds, sampler=DistributedSampler(ds))` in `__init__`, iterated every epoch by
  another method.

Checked on torch: without `set_epoch` every epoch yields the same order; the fixed code runs on both
paths."""

from __future__ import annotations

import textwrap
from types import SimpleNamespace

import torch
from torch.utils.data import DistributedSampler, TensorDataset

from traindoctor.config import Config
from traindoctor.lint import lint_source
from traindoctor.lint.api import apply_fixes

ONE_PATH = '''\
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def get_loaders(train_set, args):
    train_sampler = DistributedSampler(train_set, num_replicas=2, rank=0) if args.distributed else None
    train_loader = DataLoader(train_set, batch_size=2, shuffle=(train_sampler is None), sampler=train_sampler)
    return train_loader, train_sampler


def main(args, train_set):
    seen = []
    train_loader, _ = get_loaders(train_set, args)
    for epoch in range(args.epochs):
        for (x,) in train_loader:
            seen.append(x.tolist())
    return seen
'''

IN_INIT = '''\
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Runner:
    def __init__(self, dataset):
        self.loader = DataLoader(dataset, batch_size=2, sampler=DistributedSampler(dataset, num_replicas=2, rank=0))

    def train(self, epochs):
        seen = []
        for epoch in range(epochs):
            for (x,) in self.loader:
                seen.append(x.tolist())
        return seen
'''


def _lint(source: str):
    result = lint_source(textwrap.dedent(source), "train.py", Config(select=("TRN203",)))
    assert result.error is None, result.error
    return result


def _lines(source: str) -> list[int]:
    return [f.range.start.line + 1 for f in _lint(source).findings]


def _fixed(source: str) -> str:
    result = _lint(source)
    fixed = apply_fixes(source, [f for f in result.findings if f.fix is not None], safe_only=False)
    assert fixed != source and _lines(fixed) == []
    return fixed


def _data() -> TensorDataset:
    return TensorDataset(torch.arange(8.0))


def test_without_set_epoch_every_epoch_has_one_order_in_torch() -> None:
    sampler = DistributedSampler(_data(), num_replicas=2, rank=0)
    assert list(sampler) == list(sampler)
    sampler.set_epoch(1)
    orders = {tuple(sampler)}
    sampler.set_epoch(2)
    orders.add(tuple(sampler))
    assert len(orders) == 2


def test_a_sampler_built_on_one_path_is_reported_and_the_fix_runs_on_both() -> None:
    assert _lines(ONE_PATH) == [16]
    namespace: dict = {}
    exec(compile(_fixed(ONE_PATH), "train.py", "exec"), namespace)
    distributed = namespace["main"](SimpleNamespace(distributed=True, epochs=3), _data())
    per_epoch = [tuple(map(tuple, distributed[i:i + 2])) for i in range(0, 6, 2)]
    assert len(set(per_epoch)) > 1  # the fix makes the epochs differ
    assert len(namespace["main"](SimpleNamespace(distributed=False, epochs=2), _data())) == 8


def test_a_loader_built_in_init_is_reported_where_another_method_iterates_it() -> None:
    assert _lines(IN_INIT) == [13]
    namespace: dict = {}
    exec(compile(_fixed(IN_INIT), "train.py", "exec"), namespace)
    seen = namespace["Runner"](_data()).train(3)
    assert len({tuple(map(tuple, seen[i:i + 2])) for i in range(0, 6, 2)}) > 1


def test_quiet_when_the_class_steps_the_epoch() -> None:
    source = IN_INIT.replace("            for (x,) in self.loader:",
                             "            self.loader.sampler.set_epoch(epoch)\n            for (x,) in self.loader:")
    assert _lines(source) == []


def test_quiet_when_the_sampler_does_not_shuffle() -> None:
    assert _lines(ONE_PATH.replace("rank=0)", "rank=0, shuffle=False)")) == []
    assert _lines(IN_INIT.replace("rank=0)", "rank=0, shuffle=False)")) == []
