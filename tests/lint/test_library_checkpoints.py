"""TRN602 on files a library method fills: PyG's InMemoryDataset written the way its documentation
showed before PyG 2.4 (`torch.save(self.collate(data_list), self.processed_paths[0])`, then
`self.data, self.slices = torch.load(self.processed_paths[0])`). `collate` returns a
`torch_geometric.data.Data`, which torch's weights-only unpickler (the `torch.load` default since
2.6) refuses (vocabulary weights_only_refused_inherited)."""

from __future__ import annotations

import pickle

import pytest
import torch

from project_helpers import places_found_by_check

DATASETS = '''import torch
from torch_geometric.data import InMemoryDataset


class Whole(InMemoryDataset):
    def __init__(self, root):
        super().__init__(root)
        self.data, self.slices = torch.load(self.processed_paths[0])

    def process(self):
        data_list = [self.read(i) for i in range(10)]
        torch.save(self.collate(data_list), self.processed_paths[0])


class Unpacked(InMemoryDataset):
    def __init__(self, root):
        super().__init__(root)
        self.data, self.slices = torch.load(self.processed_paths[0])

    def process(self):
        data = self.read(0)
        data_list = [self.read(i) for i in range(10)]
        data, slices = self.collate(data_list)
        torch.save((data, slices), self.processed_paths[0])


class OnlySlices(InMemoryDataset):
    def __init__(self, root):
        super().__init__(root)
        self.slices = torch.load(self.processed_paths[0])

    def process(self):
        data, slices = self.collate([])
        torch.save(slices, self.processed_paths[0])


class OwnCollate(InMemoryDataset):
    def __init__(self, root):
        super().__init__(root)
        self.data = torch.load(self.processed_paths[0])

    def collate(self, items):
        return {"x": torch.stack(items)}

    def process(self):
        torch.save(self.collate([]), self.processed_paths[0])
'''


def _project(tmp_path, pin: str = "torch>=2.6", source: str = DATASETS):
    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'demo'\ndependencies = ['{pin}']\n")
    (tmp_path / "datasets.py").write_text(source)
    return tmp_path


def test_a_pyg_dataset_saved_with_collate_fails_to_load(tmp_path):
    # Whole and Unpacked load what collate returned; OnlySlices saves the slices (tensors) only,
    # OwnCollate's own collate returns a dict of tensors: both load. Each class's `self.processed_paths[0]`
    # is its own file: the saves of one class say nothing about another's load.
    assert places_found_by_check(_project(tmp_path), "TRN602") == [("TRN602", "datasets.py", 8),
                                                                   ("TRN602", "datasets.py", 18)]


def test_quiet_before_torch_2_6_and_with_weights_only(tmp_path):
    assert places_found_by_check(_project(tmp_path, pin="torch==2.5.1"), "TRN602") == []
    explicit = DATASETS.replace("torch.load(self.processed_paths[0])",
                                "torch.load(self.processed_paths[0], weights_only=False)")
    assert places_found_by_check(_project(tmp_path, source=explicit), "TRN602") == []


def test_quiet_for_a_class_that_is_no_pyg_dataset(tmp_path):
    plain = DATASETS.replace("from torch_geometric.data import InMemoryDataset",
                             "from torch.utils.data import Dataset as InMemoryDataset")
    assert places_found_by_check(_project(tmp_path, source=plain), "TRN602") == []


def test_the_fix_loads_the_file(tmp_path):
    _project(tmp_path)
    assert places_found_by_check(tmp_path, "TRN602", "--fix", "--unsafe-fixes") == []
    fixed = (tmp_path / "datasets.py").read_text()
    assert fixed.count("torch.load(self.processed_paths[0], weights_only=False)") == 2


def test_the_premise_on_the_installed_torch_and_pyg(tmp_path):
    """torch >= 2.6 refuses what `InMemoryDataset.collate` returns (checked with torch 2.13 and
    torch_geometric 2.8.1); the fix's weights_only=False loads it."""
    pyg = pytest.importorskip("torch_geometric")
    from torch_geometric.data import Data, InMemoryDataset

    class Graphs(InMemoryDataset):
        def __init__(self):
            super().__init__(None)

    graphs = [Data(x=torch.randn(3, 2), edge_index=torch.tensor([[0, 1], [1, 2]])) for _ in range(2)]
    collated = Graphs().collate(graphs)
    path = tmp_path / "data.pt"
    torch.save(collated, path)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path)
    data, slices = torch.load(path, weights_only=False)
    assert isinstance(data, pyg.data.Data) and set(slices) == {"x", "edge_index"}
