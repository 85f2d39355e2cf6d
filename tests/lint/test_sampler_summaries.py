"""Issue 27, point 2 (summaries) for TRN203: a builder returns DataLoaders over a shuffling
DistributedSampler (alone or as elements of a tuple), and an epoch loop elsewhere — another
function of the file, or another file of the project — iterates the loader it receives, never
calling `set_epoch`. Each shape has quiet twins: set_epoch in a helper, `shuffle=False`."""

from __future__ import annotations

import torch
from project_helpers import places_found_by_check, write_project
from torch.utils.data import DataLoader, DistributedSampler

from traindoctor.config import Config
from traindoctor.lint import lint_source

BUILDER = '''from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def build_loaders(train_set, val_set, batch_size):
    train_sampler = DistributedSampler(train_set, shuffle=True)
    val_sampler = DistributedSampler(val_set, shuffle=False)
    train_loader = DataLoader(train_set, batch_size=batch_size, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=batch_size, sampler=val_sampler)
    return train_loader, val_loader
'''

LOOP = '''def train_one_epoch(model, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()


def fit(model, optimizer, train_loader, val_loader, epochs):
    for epoch in range(epochs):
        train_one_epoch(model, train_loader, optimizer)
'''

MAIN = '''

def main(model, optimizer, train_set, val_set):
    train_loader, val_loader = build_loaders(train_set, val_set, batch_size=32)
    fit(model, optimizer, train_loader=train_loader, val_loader=val_loader, epochs=10)
'''

IN_FILE = BUILDER + "\n\n" + LOOP + MAIN


def _lines(source: str, path: str = "t.py") -> list[int]:
    return [f.range.start.line + 1 for f in lint_source(source, path, Config()).findings if f.code == "TRN203"]


def test_a_loader_returned_in_a_tuple_and_passed_by_keyword_to_the_epoch_loop():
    line = IN_FILE.splitlines().index("        train_one_epoch(model, train_loader, optimizer)") + 1
    assert _lines(IN_FILE) == [line]
    [found] = [f for f in lint_source(IN_FILE, "t.py", Config()).findings if f.code == "TRN203"]
    assert "train_loader.sampler.set_epoch(epoch)" in found.message


def test_quiet_twins_in_one_file():
    # the validation loader (shuffle=False) only: nothing shuffles
    assert _lines(IN_FILE.replace("train_loader=train_loader, val_loader=val_loader",
                                  "train_loader=val_loader, val_loader=train_loader")) == []
    # set_epoch through the loader's sampler, in a helper the loop calls
    stepped = IN_FILE.replace("    for x, y in loader:\n",
                              "    loader.sampler.set_epoch(0)\n    for x, y in loader:\n")
    assert _lines(stepped) == []
    # the train sampler does not shuffle either
    assert _lines(IN_FILE.replace("shuffle=True", "shuffle=False")) == []


def test_the_claim_holds_in_torch():
    """Without set_epoch a shuffling DistributedSampler yields the same order every epoch."""
    sampler = DistributedSampler(list(range(16)), num_replicas=1, rank=0, shuffle=True)
    loader = DataLoader(list(range(16)), sampler=sampler, batch_size=16)
    first, second = [next(iter(loader)).tolist() for _ in range(2)]
    assert first == second
    sampler.set_epoch(1)
    assert next(iter(loader)).tolist() != first
    assert torch.utils.data.get_worker_info() is None


TRAIN_HEADER = "import torch\n\nfrom data import build_loaders\n\n\n"


def _project(root, builder: str = BUILDER, loop_header: str = TRAIN_HEADER) -> None:
    write_project(root, {"data.py": builder, "train.py": loop_header + LOOP + MAIN})


TRAIN_LINE = ("import torch\n\nfrom data import build_loaders\n\n\n" + LOOP).splitlines().index(
    "        train_one_epoch(model, train_loader, optimizer)") + 1


def test_a_builder_in_another_file_through_check(tmp_path):
    _project(tmp_path)
    assert places_found_by_check(tmp_path, "TRN203", fields=("file", "line")) == [("train.py", TRAIN_LINE)]


def test_quiet_twins_across_files_through_check(tmp_path):
    _project(tmp_path, BUILDER.replace("shuffle=True", "shuffle=False"))
    assert places_found_by_check(tmp_path, "TRN203", fields=("file", "line")) == []
    # another file's helper steps the epoch, and the loop calls it
    helper = BUILDER + '''

def start_epoch(loader, epoch):
    loader.sampler.set_epoch(epoch)
'''
    (tmp_path / "data.py").write_text(helper)
    (tmp_path / "train.py").write_text(
        "import torch\n\nfrom data import build_loaders, start_epoch\n\n\n" +
        LOOP.replace("    for epoch in range(epochs):\n",
                     "    for epoch in range(epochs):\n        start_epoch(train_loader, epoch)\n") + MAIN)
    assert places_found_by_check(tmp_path, "TRN203", fields=("file", "line")) == []


def _three_files(root, builder: str = BUILDER, loop: str = LOOP) -> None:
    """The real shape: data.py builds the loaders, train.py loops, main.py wires them together."""
    write_project(root, {"data.py": builder, "train.py": "import torch\n\n\n" + loop,
                         "main.py": "import torch\n\nfrom data import build_loaders\nfrom train import fit\n" + MAIN})


MAIN_LINE = ("import torch\n\nfrom data import build_loaders\nfrom train import fit\n" + MAIN).splitlines().index(
    "    fit(model, optimizer, train_loader=train_loader, val_loader=val_loader, epochs=10)") + 1


def test_the_loader_handed_to_another_files_epoch_loop_through_check(tmp_path):
    _three_files(tmp_path)
    assert places_found_by_check(tmp_path, "TRN203", fields=("file", "line")) == [("main.py", MAIN_LINE)]


def test_quiet_when_the_other_files_loop_steps_the_epoch(tmp_path):
    _three_files(tmp_path, loop=LOOP.replace("    for epoch in range(epochs):\n",
                                             "    for epoch in range(epochs):\n"
                                             "        train_loader.sampler.set_epoch(epoch)\n"))
    assert places_found_by_check(tmp_path, "TRN203", fields=("file", "line")) == []
    _three_files(tmp_path, builder=BUILDER.replace("shuffle=True", "shuffle=False"))
    assert places_found_by_check(tmp_path, "TRN203", fields=("file", "line")) == []
    # only the validation loader (no shuffling) reaches the epoch loop
    (tmp_path / "data.py").write_text(BUILDER)
    (tmp_path / "main.py").write_text((tmp_path / "main.py").read_text().replace(
        "train_loader=train_loader, val_loader=val_loader", "train_loader=val_loader, val_loader=train_loader"))
    assert places_found_by_check(tmp_path, "TRN203", fields=("file", "line")) == []


def test_a_loop_that_only_measures_the_loader_or_waits_on_it_is_no_epoch_loop():
    from traindoctor.lint.project import summarize_source

    source = '''import torch


def fit(model, loader, epochs, state):
    for epoch in range(epochs):
        while not state.ready(loader):
            state.wait()
        print(len(loader))


def run(model, loader, epochs):
    for epoch in range(epochs):
        for x in loader:
            model(x)
'''
    summary = summarize_source("t.py", source)
    assert {f.qualname: f.epoch_loaders for f in summary.functions} == {"fit": (), "run": ("loader",)}


FIXMATCH = '''import torch
from torch.utils.data import DataLoader, RandomSampler
from torch.utils.data.distributed import DistributedSampler


def train(args, labeled_trainloader, model, optimizer):
    labeled_iter = iter(labeled_trainloader)
    for epoch in range(args.start_epoch, args.epochs):
        for batch_idx in range(args.eval_step):
            try:
                inputs_x, targets_x = next(labeled_iter)
            except StopIteration:
                labeled_iter = iter(labeled_trainloader)
                inputs_x, targets_x = next(labeled_iter)
            model(inputs_x).sum().backward()
            optimizer.step()


def main(args, labeled_dataset, model, optimizer):
    train_sampler = RandomSampler if args.local_rank == -1 else DistributedSampler
    labeled_trainloader = DataLoader(labeled_dataset, sampler=train_sampler(labeled_dataset), batch_size=64)
    train(args, labeled_trainloader, model, optimizer)
'''


def test_a_sampler_class_chosen_at_run_time():
    """FixMatch's shape: the class is RandomSampler or DistributedSampler by the rank."""
    found = [f for f in lint_source(FIXMATCH, "t.py", Config()).findings if f.code == "TRN203"]
    assert [f.range.start.line + 1 for f in found] == [13]
    assert not _lines(FIXMATCH.replace("else DistributedSampler", "else RandomSampler"))
    stepped = FIXMATCH.replace("    for epoch in range(args.start_epoch, args.epochs):\n",
                               "    for epoch in range(args.start_epoch, args.epochs):\n"
                               "        labeled_trainloader.sampler.set_epoch(epoch)\n")
    assert not _lines(stepped)


def test_a_builder_whose_sampler_shuffles_as_its_caller_says_tells_nothing():
    """dinov2's shape: `make_data_loader(..., shuffle=False)` builds `DistributedSampler(shuffle=shuffle)`."""
    source = IN_FILE.replace("def build_loaders(train_set, val_set, batch_size):",
                             "def build_loaders(train_set, val_set, batch_size, shuffle):").replace(
        "DistributedSampler(train_set, shuffle=True)", "DistributedSampler(train_set, shuffle=shuffle)").replace(
        "build_loaders(train_set, val_set, batch_size=32)", "build_loaders(train_set, val_set, 32, False)")
    assert _lines(source) == []


def test_a_builder_that_is_distributed_on_one_path_gets_a_guarded_fix():
    """DeepSpeed-Chat's shape: a RandomSampler when local_rank == -1, which has no set_epoch."""
    source = IN_FILE.replace(
        "    train_sampler = DistributedSampler(train_set, shuffle=True)\n",
        "    if rank == -1:\n        train_sampler = RandomSampler(train_set)\n    else:\n"
        "        train_sampler = DistributedSampler(train_set, shuffle=True)\n").replace(
        "from torch.utils.data import DataLoader\n",
        "from torch.utils.data import DataLoader, RandomSampler\n").replace(
        "def build_loaders(train_set, val_set, batch_size):",
        "def build_loaders(train_set, val_set, batch_size, rank=0):")
    [found] = [f for f in lint_source(source, "t.py", Config()).findings if f.code == "TRN203"]
    assert found.fix is not None
    inserted = "".join(edit.new_text for edit in found.fix.edits)
    assert 'if hasattr(train_loader.sampler, "set_epoch"):' in inserted


def test_quiet_when_a_framework_runs_the_epochs():
    """Lightning's Trainer steps the sampler's epoch itself: the loader is handed over once, no loop of ours."""
    source = BUILDER + '''

import lightning as L


def main(model, train_set, val_set):
    train_loader, val_loader = build_loaders(train_set, val_set, batch_size=32)
    trainer = L.Trainer(max_epochs=10, strategy="ddp")
    trainer.fit(model, train_dataloaders=train_loader, val_dataloaders=val_loader)
'''
    assert _lines(source) == []
