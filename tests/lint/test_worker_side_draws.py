"""TRN202 false finding of the first lint of THUDM/GraphMAE (h/prec8, sixth fresh batch, group A, bench/ecosystem):
`chem/pretraining.py` seeds torch (and NumPy) but not `random`, whose only draws (`random.sample` in a mask
transform) run in the `collate_fn` of a project DataLoader subclass built with `num_workers=args.num_workers`
(an argparse option, default 8). DataLoader workers reseed `random`, torch and (torch >= 1.9) NumPy from a base
seed drawn from the parent's torch generator, so those draws repeat under `torch.manual_seed`. The same shape
through a Dataset's `__getitem__` (EfficientDet, dgcnn in h/prec7's carry-over groups) is quiet too.

Look-alikes that stay found: the same loader with `num_workers` 0 (the draws run in the main process, unseeded),
a dataset also indexed in the main process, and an in-file dataset under a loader without workers. The torch
fact is checked against torch: the same draws twice with workers, different draws without them."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from project_helpers import places_found_by_check, write_project

UTIL = """\
    import random


    class MaskAtom:
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, item):
            keep = random.sample(range(len(item)), max(1, int(len(item) * self.rate)))
            return [item[i] for i in keep]
"""

LOADERS = """\
    import torch.utils.data
    from torch.utils.data.dataloader import default_collate

    from util import MaskAtom


    class MaskingLoader(torch.utils.data.DataLoader):
        def __init__(self, dataset, batch_size=1, shuffle=True, mask_rate=0.25, **kwargs):
            self._transform = MaskAtom(mask_rate)
            super().__init__(dataset, batch_size, shuffle, collate_fn=self.collate_fn, **kwargs)

        def collate_fn(self, batch):
            return default_collate([self._transform(x) for x in batch])
"""

PRETRAIN = """\
    import argparse

    import torch

    from loaders import MaskingLoader


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--num_workers", type=int, default={workers})
        args = parser.parse_args()
        torch.manual_seed(0)
        data = [list(range(10)) for _ in range(64)]
        loader = MaskingLoader(data, batch_size=4, shuffle=True, num_workers=args.num_workers)
        for batch in loader:
            print(batch)


    if __name__ == "__main__":
        main()
"""

DATA = """\
    import numpy as np
    import torch
    from torch.utils.data import Dataset


    class Jitter(Dataset):
        def __init__(self, points):
            self.points = points

        def __len__(self):
            return len(self.points)

        def __getitem__(self, i):
            return torch.as_tensor(self.points[i] + np.random.normal(0, 0.01, size=self.points[i].shape))
"""

TRAIN = """\
    import numpy as np
    import torch
    from torch.utils.data import DataLoader

    from data import Jitter


    def main():
        torch.manual_seed(1)
        dataset = Jitter(np.zeros((64, 3)))
        {peek}
        for batch in DataLoader(dataset, batch_size=8, shuffle=True, num_workers={workers}):
            print(batch.sum())


    if __name__ == "__main__":
        main()
"""

IN_FILE = """\
    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset


    class Noisy(Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            return torch.as_tensor(np.random.rand(3))


    NUM_WORKERS = {workers}


    def main():
        torch.manual_seed(0)
        for batch in DataLoader(Noisy(), batch_size=4, num_workers=NUM_WORKERS):
            print(batch)


    if __name__ == "__main__":
        main()
"""


def test_a_loader_subclass_whose_collate_fn_draws_in_workers_is_quiet(tmp_path):
    write_project(tmp_path, {"util.py": UTIL, "loaders.py": LOADERS, "pretrain.py": PRETRAIN.format(workers=8)},
                  dedent=True)
    assert places_found_by_check(tmp_path, "TRN202", fields=("file", "line")) == []


def test_the_same_loader_without_workers_is_found(tmp_path):
    write_project(tmp_path, {"util.py": UTIL, "loaders.py": LOADERS, "pretrain.py": PRETRAIN.format(workers=0)},
                  dedent=True)
    assert places_found_by_check(tmp_path, "TRN202", fields=("file", "line")) == [("pretrain.py", 12)]


def test_a_project_dataset_drawing_in_getitem_under_workers_is_quiet(tmp_path):
    write_project(tmp_path, {"data.py": DATA, "train.py": TRAIN.format(peek="pass", workers=4)}, dedent=True)
    assert places_found_by_check(tmp_path, "TRN202", fields=("file", "line")) == []


def test_a_project_dataset_without_workers_or_read_in_the_main_process_is_found(tmp_path):
    write_project(tmp_path, {"data.py": DATA, "train.py": TRAIN.format(peek="pass", workers=0)}, dedent=True)
    assert places_found_by_check(tmp_path, "TRN202", fields=("file", "line")) == [("train.py", 9)]
    write_project(tmp_path, {"data.py": DATA, "train.py": TRAIN.format(peek="print(dataset[0])", workers=4)},
                  dedent=True)
    assert places_found_by_check(tmp_path, "TRN202", fields=("file", "line")) == [("train.py", 9)]


def test_an_in_file_dataset_follows_the_loader_s_worker_count(tmp_path):
    write_project(tmp_path, {"train.py": IN_FILE.format(workers=2)}, dedent=True)
    assert places_found_by_check(tmp_path, "TRN202", fields=("file", "line")) == []
    write_project(tmp_path, {"train.py": IN_FILE.format(workers=0)}, dedent=True)
    assert places_found_by_check(tmp_path, "TRN202", fields=("file", "line")) == [("train.py", 18)]


SHARED = """\
    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset


    class Noisy(Dataset):
        def __init__(self):
            self.base = self.draw()  # the main process draws too

        def draw(self):
            return np.random.rand(3)

        def __len__(self):
            return 16

        def __getitem__(self, i):
            return torch.as_tensor(self.draw())


    def main():
        torch.manual_seed(0)
        for batch in DataLoader(Noisy(), batch_size=4, num_workers=2):
            print(batch)
"""


def test_a_drawing_method_that_init_calls_too_is_found(tmp_path):
    write_project(tmp_path, {"train.py": SHARED}, dedent=True)
    assert places_found_by_check(tmp_path, "TRN202", fields=("file", "line")) == [("train.py", 21)]


# -- a transform handed to a dataset (zylo117/Yet-Another-EfficientDet-Pytorch, a dev false finding) ------
# `Augmenter.__call__` draws `np.random.rand()`; train.py composes it into the dataset's transform, and the
# DataLoader gets its workers from a `**params` dict whose `num_workers` is an argparse default read through a
# `get_args()` helper. The dataset calls the transform in `__getitem__`: the draws run in the workers.

TRANSFORMS = """\
    import numpy as np
    import torch
    from torch.utils.data import Dataset


    class CocoLike(Dataset):
        def __init__(self, n, transform=None):
            self.n = n
            self.transform = transform

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            sample = {"img": np.zeros((4, 4)), "i": i}
            return self.transform(sample) if self.transform else sample


    class Augmenter:
        def __call__(self, sample, flip_x=0.5):
            if np.random.rand() < flip_x:
                sample["img"] = sample["img"][:, ::-1]
            return sample


    class Normalizer:
        def __call__(self, sample):
            return sample
"""

AUGMENTED = """\
    import argparse

    import torch
    from torch.utils.data import DataLoader
    from torchvision import transforms

    from dataset import Augmenter, CocoLike, Normalizer


    def get_args():
        parser = argparse.ArgumentParser()
        parser.add_argument("-n", "--num_workers", type=int, default={workers})
        args = parser.parse_args()
        return args


    def train(opt):
        torch.manual_seed(42)
        training_params = {{"batch_size": 4, "shuffle": True, "num_workers": opt.num_workers}}
        {build}
        for batch in DataLoader(training_set, **training_params):
            print(batch["i"])


    if __name__ == "__main__":
        opt = get_args()
        train(opt)
"""

COMPOSED = ("training_set = CocoLike(16, transform=transforms.Compose([Normalizer(), Augmenter()]))")
NAMED = ("augment = transforms.Compose([Normalizer(), Augmenter()])\n"
         "        training_set = CocoLike(16, transform=augment)")
MAIN_SIDE = ("augment = Augmenter()\n"
             "        training_set = [augment({{'img': x, 'i': 0}}) for x in torch.zeros(16, 4, 4).numpy()]")


def test_a_transform_composed_into_a_dataset_that_workers_run_is_quiet(tmp_path):
    for build in (COMPOSED, NAMED):
        write_project(tmp_path, {"dataset.py": TRANSFORMS, "train.py": AUGMENTED.format(workers=12, build=build)},
                      dedent=True)
        assert places_found_by_check(tmp_path, "TRN202", fields=("file", "line")) == [], build


def test_a_transform_without_workers_or_called_in_the_main_process_is_found(tmp_path):
    for workers, build in ((0, COMPOSED), (0, NAMED), (12, MAIN_SIDE)):
        write_project(tmp_path, {"dataset.py": TRANSFORMS,
                                 "train.py": AUGMENTED.format(workers=workers, build=build.replace("{{", "{")
                                                              .replace("}}", "}"))}, dedent=True)
        assert places_found_by_check(tmp_path, "TRN202", fields=("file", "line")) == [("train.py", 18)], build


def test_a_transform_handed_to_a_function_is_not_assumed_to_run_in_workers(tmp_path):
    """`preprocess(data, Augmenter())` may call the transform right there, in the main process."""
    build = ("training_set = CocoLike(16, transform=preprocess(Augmenter()))")
    source = AUGMENTED.format(workers=12, build=build).replace(
        "def train(opt):", "def preprocess(t):\n        t({'img': torch.zeros(4, 4).numpy(), 'i': 0})\n"
                           "        return t\n\n\n    def train(opt):")
    write_project(tmp_path, {"dataset.py": TRANSFORMS, "train.py": source}, dedent=True)
    assert [f for f, _ in places_found_by_check(tmp_path, "TRN202", fields=("file", "line"))] == ["train.py"]


# -- the torch fact: workers reseed `random` and NumPy from the seeded torch generator ----------------

DRAWS = """\
    import random
    import sys

    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset


    class Draws(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            return torch.tensor([random.random(), float(np.random.rand())])


    if __name__ == "__main__":
        torch.manual_seed(0)
        loader = DataLoader(Draws(), batch_size=4, num_workers=int(sys.argv[1]))
        print(torch.cat([b for b in loader]).tolist())
"""


def test_workers_reseed_random_and_numpy_from_the_torch_seed(tmp_path):
    script = tmp_path / "draws.py"
    script.write_text(textwrap.dedent(DRAWS))

    def run(workers):
        done = subprocess.run([sys.executable, str(script), str(workers)], capture_output=True, text=True,
                              timeout=120, check=True)
        return done.stdout

    assert run(2) == run(2)  # seeded through the workers' base seed
    assert run(0) != run(0)  # in the main process, `random` and NumPy are never seeded
