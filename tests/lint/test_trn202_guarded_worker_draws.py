"""TRN202 precision: a dataset whose item access draws only under `if self.<attr> == '<literal>'`, where
`__init__` binds the attribute from a parameter (WangYueFt/dgcnn pytorch/main.py:216, ecosystem dev, judged fp:
the test split, which draws nothing, runs under a loader without workers). An object built with another literal
never draws, so a loader without workers over it leaves nothing unseeded, while the drawing objects run in
loaders that start workers, which reseed NumPy from the seeded torch generator (checked on torch below).
Look-alikes stay found: the drawing literal under a loader without workers, an attribute set again after
building, a draw outside the guard."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from project_helpers import places_found_by_check, write_project

# -- draws switched off by a constructor argument ---------------------------------------------------------

DATA = """\
    import numpy as np
    import torch
    from torch.utils.data import Dataset


    def jitter(points):
        return points + np.random.normal(0, 0.01, size=points.shape)


    class Clouds(Dataset):
        def __init__(self, size, split="train"):
            self.points = np.zeros((size, 3))
            self.split = split

        def __len__(self):
            return len(self.points)

        def __getitem__(self, i):
            points = self.points[i]
            if self.split == "train":
                points = jitter(points)
                np.random.shuffle(points)
            {outside}
            return torch.as_tensor(points)
"""

TRAIN = """\
    import torch
    from torch.utils.data import DataLoader

    from data import Clouds


    def train():
        loader = DataLoader(Clouds(64, split="train"), batch_size=8, shuffle=True, num_workers=4)
        for batch in loader:
            print(batch.sum())


    def test():
        evaluation = DataLoader(Clouds(64, split="{evaluated}"), batch_size=8)
        {after}
        for batch in evaluation:
            print(batch.sum())


    if __name__ == "__main__":
        torch.manual_seed(1)
        train()
        test()
"""


def _project(tmp_path, outside="pass", evaluated="test", after="pass"):
    write_project(tmp_path, {"data.py": DATA.format(outside=outside),
                             "train.py": TRAIN.format(evaluated=evaluated, after=after)}, dedent=True)
    return places_found_by_check(tmp_path, "TRN202", fields=("file", "line"))


def test_a_split_without_draws_under_a_loader_without_workers_is_quiet(tmp_path):
    assert _project(tmp_path) == []


def test_the_drawing_split_under_a_loader_without_workers_is_found(tmp_path):
    assert _project(tmp_path, evaluated="train") == [("train.py", 21)]


def test_a_draw_outside_the_split_test_is_found(tmp_path):
    assert _project(tmp_path, outside="points = points * np.random.rand()") == [("train.py", 21)]


def test_a_split_set_again_after_building_is_found(tmp_path):
    assert _project(tmp_path, after="evaluation.dataset.split = 'train'") == [("train.py", 21)]


IN_FILE = """\
    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset


    class Clouds(Dataset):
        def __init__(self, size, split="train"):
            self.points = np.zeros((size, 3))
            self.split = split

        def __len__(self):
            return len(self.points)

        def __getitem__(self, i):
            points = self.points[i]
            if self.split in ("train", "trainval"):
                np.random.shuffle(points)
            return torch.as_tensor(points)


    if __name__ == "__main__":
        torch.manual_seed(1)
        for batch in DataLoader(Clouds(64), batch_size=8, num_workers=2):
            print(batch.sum())
        for batch in DataLoader(Clouds(64, "{evaluated}"), batch_size=8):
            print(batch.sum())
"""


def test_an_in_file_dataset_follows_the_split_each_loader_gets(tmp_path):
    write_project(tmp_path, {"train.py": IN_FILE.format(evaluated="test")}, dedent=True)
    assert places_found_by_check(tmp_path, "TRN202", fields=("file", "line")) == []
    write_project(tmp_path, {"train.py": IN_FILE.format(evaluated="trainval")}, dedent=True)
    assert places_found_by_check(tmp_path, "TRN202", fields=("file", "line")) == [("train.py", 22)]


# -- the torch facts: the drawing split repeats under workers, the other draws nothing ----------------------

RUN = """\
    import json
    import sys

    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset


    class Clouds(Dataset):
        def __init__(self, split):
            self.points = np.arange(24, dtype=np.float64).reshape(8, 3)
            self.split = split

        def __len__(self):
            return len(self.points)

        def __getitem__(self, i):
            points = self.points[i].copy()
            if self.split == "train":
                points += np.random.normal(0, 1, size=3)
            return torch.as_tensor(points)


    if __name__ == "__main__":
        torch.manual_seed(0)
        workers = int(sys.argv[1])
        train = torch.cat(list(DataLoader(Clouds("train"), batch_size=4, num_workers=workers)))
        test = torch.cat(list(DataLoader(Clouds("test"), batch_size=4)))
        print(json.dumps([train.tolist(), test.tolist()]))
"""


def test_worker_draws_repeat_and_the_other_split_draws_nothing(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(RUN))

    def run(workers):
        return subprocess.run([sys.executable, str(script), str(workers)], capture_output=True, text=True,
                              timeout=120, check=True).stdout

    assert run(2) == run(2)  # NumPy in each worker is seeded from the seeded torch generator
    assert run(0) != run(0)  # in the main process NumPy is never seeded
    _, test_split = json.loads(run(2))
    assert test_split == [[float(3 * i + j) for j in range(3)] for i in range(8)]
