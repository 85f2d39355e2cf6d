"""The project index (issue 27, point 2): per-file summaries, import resolution (absolute,
relative, star with `__all__`, re-exports through `__init__.py`) and the rules that read
another file's facts, on real files in tmp_path, through `check` as a user runs it."""

from __future__ import annotations

import pickle
from pathlib import Path

from project_helpers import index_of, lint_in_project, places, run_check, write_project
from traindoctor.lint.analysis.summary import ClassSummary, FunctionSummary
from traindoctor.lint.project import index_for_check, new_index, summarize_source

MODELS = """import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


def load_model(path):
    model = Net()
    model.load_state_dict(torch.load(path))
    model.eval()
    return model


def nograd(fn):
    def wrapper(*args, **kwargs):
        with torch.no_grad():
            return fn(*args, **kwargs)
    return wrapper


def freeze_autograd():
    torch.set_grad_enabled(False)
"""

EVALUATE = """import torch
from models import load_model


def evaluate(loader):
    model = load_model("net.pt")
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
    return correct
"""


# -- summaries -------------------------------------------------------------------------


def test_a_summary_says_what_functions_return_and_do_and_pickles_equal(tmp_path):
    summary = summarize_source(str(tmp_path / "models.py"), MODELS)
    by_name = {f.qualname: f for f in summary.functions}
    assert set(by_name) == {"load_model", "nograd", "freeze_autograd"}  # the nested wrapper is not one
    assert by_name["load_model"].returns_eval and by_name["load_model"].returns[5] == "model"
    assert by_name["nograd"].no_grad_decorator and not by_name["load_model"].no_grad_decorator
    assert by_name["freeze_autograd"].leaves_grad_off
    net = summary.symbol("Net")
    assert isinstance(net, ClassSummary) and net.module and net.method("forward").returns[3] == "logits"
    copy = pickle.loads(pickle.dumps(summary))
    assert copy == summary and copy.symbol("Net") == net
    assert summarize_source("models.py", MODELS) == summary  # the same text, an equal summary


def test_update_says_whether_the_summary_changed(tmp_path):
    index = new_index()
    path = str(tmp_path / "models.py")
    assert index.update(path, MODELS)
    assert not index.update(path, MODELS + "\n# a comment\n")
    assert not index.update(path, MODELS.replace("nn.Linear(4, 2)", "nn.Linear(8, 2)"))
    assert index.update(path, MODELS.replace("    model.eval()\n", ""))


# -- resolution ----------------------------------------------------------------------------


def test_relative_star_and_package_reexports_resolve(tmp_path):
    root = write_project(tmp_path, {
        "src/demo/__init__.py": "from .nets import *\n",
        "src/demo/nets/__init__.py": "from .core import load_model, _private\n__all__ = ['load_model']\n",
        "src/demo/nets/core.py": MODELS + "\ndef _private():\n    pass\n",
        "src/demo/run.py": "from . import load_model\nfrom .nets.core import nograd as ng\n",
        "scripts/eval.py": "import demo.nets.core as core\nfrom demo import *\n",
    })
    index = index_of(sorted(root.rglob("*.py")))
    run = root / "src/demo/run.py"
    facts = index.imported_for(str(run), index.summary(str(run)).imports)
    assert isinstance(facts.function("load_model"), FunctionSummary)  # relative, through two __init__.py
    assert facts.function("ng").no_grad_decorator  # relative with an alias
    script = root / "scripts/eval.py"
    facts = index.imported_for(str(script), index.summary(str(script)).imports)
    assert facts.function("demo.nets.core.load_model").returns_eval  # `import a.b.c as core` (src layout)
    assert facts.function("load_model") is not None  # the star import honours __all__ ...
    assert facts.get("_private") is None and facts.get("nograd") is None  # ... and nothing else
    core = str(root / "src/demo/nets/core.py")
    assert index.dependants(core) == {str(root / p) for p in ("src/demo/nets/__init__.py", "src/demo/__init__.py",
                                                              "src/demo/run.py", "scripts/eval.py")}
    assert index.dependants(str(run)) == set()


def test_a_library_import_is_unknown_not_a_project_fact(tmp_path):
    root = write_project(tmp_path, {"train.py": "import torch\nfrom torchvision.models import resnet18\n"})
    index = index_of(sorted(root.rglob("*.py")))
    path = str(root / "train.py")
    assert not index.imported_for(path, index.summary(path).imports)


# -- rules reading another file's facts --------------------------------------------------


def test_trn102_a_model_from_a_helper_in_another_file_evaluated_without_no_grad(tmp_path):
    root = write_project(tmp_path, {"models.py": MODELS, "evaluate.py": EVALUATE})
    found = run_check(root, "TRN102")
    assert places(found, ("file", "line")) == [("evaluate.py", 9)]
    # the same loop, decorated with the project's own no_grad decorator from models.py: quiet
    (root / "evaluate.py").write_text(EVALUATE.replace("from models import load_model",
                                                       "from models import load_model, nograd")
                                      .replace("def evaluate", "@nograd\ndef evaluate"))
    assert run_check(root, "TRN102") == []
    # a helper of another file that leaves grad mode off before the loop: quiet
    (root / "evaluate.py").write_text(EVALUATE.replace("from models import load_model",
                                                       "from models import load_model, freeze_autograd")
                                      .replace("    correct = 0\n", "    freeze_autograd()\n    correct = 0\n"))
    assert run_check(root, "TRN102") == []


def test_trn102_unknown_helper_stays_quiet(tmp_path):
    """Without the file that defines load_model, nothing says the model is in eval mode."""
    root = write_project(tmp_path, {"evaluate.py": EVALUATE})
    assert run_check(root, "TRN102") == []


def test_trn602_save_in_one_file_and_load_in_another(tmp_path):
    save = "import torch\nfrom models import Net\n\nnet = Net()\ntorch.save(net, 'net.pt')\n"
    load = "import torch\n\nstate = torch.load('net.pt')\n"
    root = write_project(tmp_path, {"models.py": MODELS, "train.py": save, "super_resolve.py": load})
    found = run_check(root, "TRN602")
    assert places(found, ("file", "line")) == [("super_resolve.py", 3)]
    assert "train.py" in found[0]["message"] and "`net`" in found[0]["message"]
    (root / "train.py").write_text(save.replace("torch.save(net,", "torch.save(net.state_dict(),"))
    assert run_check(root, "TRN602") == []


def test_trn602_a_parameter_every_caller_passes_a_state_dict_is_a_state_dict(tmp_path):
    text = """import torch
from models import Net


def save_checkpoint(model_data, epoch):
    torch.save(model_data, "ckpt.pt")


def main():
    model = Net()
    save_checkpoint(model.state_dict(), 1)
    save_checkpoint({"model": model.state_dict(), "epoch": 3}, epoch=2)
    torch.load("ckpt.pt")
"""
    root = write_project(tmp_path, {"models.py": MODELS, "train.py": text})
    assert run_check(root, "TRN602") == []
    (root / "train.py").write_text(text.replace('save_checkpoint(model.state_dict(), 1)',
                                                'save_checkpoint(model, 1)'))
    # one caller passes the module: the parameter is not known to be a state dict (the rule
    # then falls back to the name, as before: `model_data` names a model)
    assert [f["line"] for f in run_check(root, "TRN602")] == [13]


SCALER = """import torch


class AmpHelper:
    def __init__(self):
        self.scaler = torch.cuda.amp.GradScaler()

    def backward(self, loss, optimizer):
        self.scaler.scale(loss).backward()
        self.scaler.step(optimizer)
        self.scaler.update()
"""

AMP_TRAIN = """import torch
from amp_utils import AmpHelper


def train(model, loader, optimizer):
    amp = AmpHelper()
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x).sum()
        amp.scaler.scale(loss).backward()
        amp.scaler.step(optimizer)
        amp.scaler.update()
"""


def test_trn403_a_gradscaler_wrapped_in_a_project_class_of_another_file_is_a_scaler(tmp_path):
    root = write_project(tmp_path, {"amp_utils.py": SCALER, "train.py": AMP_TRAIN})
    assert run_check(root, "TRN403") == []
    # the scaler built but this loop's backward unscaled: only the project index says the file has one
    plain = AMP_TRAIN.replace("amp.scaler.scale(loss).backward()", "loss.backward()")
    (root / "train.py").write_text(plain)
    assert run_check(root, "TRN403") == []
    (root / "amp_utils.py").write_text(SCALER.replace("self.scaler = torch.cuda.amp.GradScaler()",
                                                      "self.scaler = None"))
    assert places(run_check(root, "TRN403"), ("file",)) == [("train.py",)]


def test_trn403_a_loss_scaled_through_the_scaler_protocol_is_scaled_whoever_built_the_scaler(tmp_path):
    # `scaler.scale(loss).backward()` with a scaler handed in (salesforce/LAVIS's train_inner_loop, bench g010)
    (root := tmp_path / "proj").mkdir()
    (root / "amp_utils.py").write_text(SCALER.replace("self.scaler = torch.cuda.amp.GradScaler()",
                                                      "self.scaler = None"))
    (root / "train.py").write_text(AMP_TRAIN)
    assert run_check(root, "TRN403") == []


SEEDING = """import random
import numpy as np
import torch


def set_seed(seed):
    torch.manual_seed(seed)
"""

SEEDED_TRAIN = """import numpy as np
import torch
from utils import set_seed

set_seed(0)
noise = np.random.rand(3)
weights = torch.randn(3)
"""


def test_trn202_a_seeding_helper_of_another_file_seeds_what_its_body_seeds(tmp_path):
    root = write_project(tmp_path, {"utils.py": SEEDING, "train.py": SEEDED_TRAIN})
    found = run_check(root, "TRN202")
    assert places(found, ("file", "line")) == [("train.py", 5)]
    assert "numpy" in found[0]["message"]
    (root / "utils.py").write_text(SEEDING + "    np.random.seed(seed)\n    random.seed(seed)\n")
    assert run_check(root, "TRN202") == []
    # not indexed (outside the project): what the helper seeds is unknown, and the rule is quiet
    (root / "utils.py").unlink()
    assert run_check(root, "TRN202") == []


REPLAY = """import random


class ReplayMemory:
    def __init__(self, capacity):
        self.buffer = []

    def sample(self, batch_size):
        return random.sample(self.buffer, batch_size)
"""

SAC_MAIN = """import numpy as np
import torch
from replay_memory import ReplayMemory

torch.manual_seed(0)
np.random.seed(0)
memory = ReplayMemory(1000)
batch = memory.sample(32)
"""


def test_trn202_a_project_class_of_another_file_draws_from_an_unseeded_rng(tmp_path):
    root = write_project(tmp_path, {"replay_memory.py": REPLAY, "main.py": SAC_MAIN})
    found = run_check(root, "TRN202")
    assert places(found, ("file", "line")) == [("main.py", 5)]
    assert "`random`" in found[0]["message"] and "ReplayMemory.sample" in found[0]["message"]
    # the fix of that commit: the class seeds `random` itself
    (root / "replay_memory.py").write_text(REPLAY.replace("        self.buffer = []\n",
                                                          "        self.buffer = []\n        random.seed(0)\n"))
    assert run_check(root, "TRN202") == []


def test_trn202_draws_two_files_away_a_manager_building_another_files_sampler(tmp_path):
    samplers = """import numpy as np
from torch.utils.data import Sampler


class IdentitySampler(Sampler):
    def __init__(self, labels):
        self.labels = labels

    def __iter__(self):
        return iter(np.random.permutation(len(self.labels)))
"""
    manager = """import torch
from torch.utils.data import DataLoader
from samplers import IdentitySampler


class DataManager:
    def __init__(self, dataset):
        sampler = IdentitySampler(dataset.labels)
        self.loader = DataLoader(dataset, sampler=sampler, batch_size=32)
"""
    main = """import torch
from data_manager import DataManager

torch.manual_seed(1)
manager = DataManager(dataset)
"""
    root = write_project(tmp_path, {"samplers.py": samplers, "data_manager.py": manager, "main.py": main})
    found = run_check(root, "TRN202")
    assert places(found, ("file", "line")) == [("main.py", 4)]
    assert "`numpy`" in found[0]["message"] and "DataManager.__init__" in found[0]["message"]
    (root / "main.py").write_text(main.replace("torch.manual_seed(1)\n", "torch.manual_seed(1)\nnp.random.seed(1)\n")
                                  .replace("import torch\n", "import numpy as np\nimport torch\n"))
    assert run_check(root, "TRN202") == []


def test_trn204_a_worker_seeding_through_a_helper_of_another_file(tmp_path):
    spawn = """import torch
import torch.multiprocessing as mp
from utils import init_rngs


def worker(rank):
    init_rngs(rank)
    torch.randn(3)


if __name__ == "__main__":
    torch.manual_seed(0)
    mp.spawn(worker, nprocs=2)
"""
    helper = "import torch\n\n\ndef init_rngs(seed):\n    torch.manual_seed(seed)\n"
    root = write_project(tmp_path, {"utils.py": helper, "main.py": spawn})
    assert run_check(root, "TRN204") == []
    (root / "utils.py").write_text("import torch\n\n\ndef init_rngs(seed):\n    pass\n")
    assert places(run_check(root, "TRN204"), ("file",)) == [("main.py",)]


def test_check_indexes_imported_project_files_it_was_not_asked_to_check(tmp_path):
    root = write_project(tmp_path, {"models.py": MODELS, "evaluate.py": EVALUATE})
    found = run_check(root, "TRN102", "--jobs", "1", str(root / "evaluate.py"))
    assert set(places(found, ("file", "line"))) == {("evaluate.py", 9)}


def test_check_in_parallel_reads_the_same_facts(tmp_path):
    files = {"models.py": MODELS, "evaluate.py": EVALUATE}
    files.update({f"other{i}.py": "import torch\nx = torch.zeros(1)\n" for i in range(10)})
    root = write_project(tmp_path, files)
    assert places(run_check(root, "TRN102", "--jobs", "2"), ("file", "line")) == [("evaluate.py", 9)]


def test_an_edit_of_the_helper_changes_the_lint_of_its_dependant(tmp_path):
    root = write_project(tmp_path, {"models.py": MODELS, "evaluate.py": EVALUATE})
    index = index_of(sorted(root.rglob("*.py")))
    assert [f.code for f in lint_in_project(root, "evaluate.py", "TRN102", index).findings] == ["TRN102"]
    models = str(root / "models.py")
    assert index.update(models, MODELS.replace("    model.eval()\n", ""))
    assert index.dependants(models) == {str(root / "evaluate.py")}
    assert lint_in_project(root, "evaluate.py", "TRN102", index).findings == ()


def test_index_for_check_is_bounded_to_imported_project_files(tmp_path):
    root = write_project(tmp_path, {"models.py": MODELS, "evaluate.py": EVALUATE, "unrelated.py": "import torch\n"})
    index = index_for_check([str(root / "evaluate.py")], lambda f, items: [f(i) for i in items])
    assert sorted(Path(p).name for p in index.paths()) == ["evaluate.py", "models.py"]
