"""`check` lints a file a second time, with the project's facts, only when a question its first
lint asked gets an answer there that differs from no facts. A project base class that is no
nn.Module (torch.optim's files and their `Optimizer`) answers "is it a module?" as no facts do."""

from __future__ import annotations

from pathlib import Path

from traindoctor.config import Config
from traindoctor.lint.analysis.summary import answers
from traindoctor.lint.api import lint_source
from traindoctor.lint.engine import LintCache
from traindoctor.lint.project import Asking, index_for_check

from project_helpers import places_found_by_check, write_project

FILES = {
    "base.py": "class Optimizer:\n    def __init__(self, params):\n        self.params = list(params)\n",
    "layers.py": "import torch.nn as nn\n\n\nclass Block(nn.Module):\n    def forward(self, x):\n        return x\n",
    # each keeps modules in a plain list: a finding (TRN705) only in a class that is an nn.Module,
    # so both lints ask whether their project base class is one
    "adam.py": "import torch.nn as nn\nfrom base import Optimizer\n\n\nclass Adam(Optimizer):\n"
               "    def __init__(self, params):\n        super().__init__(params)\n"
               "        self.probes = [nn.Linear(2, 2), nn.Linear(2, 2)]\n",
    "net.py": "import torch.nn as nn\nfrom layers import Block\n\n\nclass Net(Block):\n"
              "    def __init__(self):\n        super().__init__()\n"
              "        self.heads = [nn.Linear(2, 2), nn.Linear(2, 2)]\n",
}


def _asked_and_answered(tmp_path: Path) -> dict[str, bool]:
    write_project(tmp_path, FILES)
    paths = [str(tmp_path / name) for name in FILES]
    index = index_for_check(paths, lambda function, items: [function(item) for item in items])
    found = {}
    for name in ("adam.py", "net.py"):
        path = str(tmp_path / name)
        asking = Asking()
        lint_source(FILES[name], path, Config(), LintCache(), asking)
        imported = index.imported_for(path, index.summary(path).imports)
        found[name] = answers(imported, asking.facts.asked)
    return found


def test_a_project_base_that_is_no_module_needs_no_second_lint(tmp_path: Path):
    assert _asked_and_answered(tmp_path)["adam.py"] is False


def test_a_project_base_that_is_a_module_is_linted_again_with_it(tmp_path: Path):
    assert _asked_and_answered(tmp_path)["net.py"] is True


def test_check_reports_the_list_only_in_the_class_whose_project_base_is_a_module(tmp_path: Path):
    write_project(tmp_path, FILES)
    assert places_found_by_check(tmp_path, "TRN705", fields=("code", "file")) == [("TRN705", "net.py")]
