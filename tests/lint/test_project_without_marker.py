"""A project with no marker (no pyproject.toml, setup.py, setup.cfg or .git: a research repository
downloaded as an archive) imports its own modules from the folder its program starts in (`python
train.py` at the repository's top, whose `mt_dnn.matcher` imports `module.dropout_wrapper`). `check` takes the folders it is given and its
working directory as such places (ProjectIndex.set_base_folders), so `from module.dropout_wrapper
import DropoutWrapper` in mt_dnn/matcher.py reads module/dropout_wrapper.py."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from project_helpers import places_found_by_check, run_check, write_project

WRAPPER = '''import torch.nn as nn


class DropoutWrapper(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        return nn.functional.dropout(x, self.p, training=self.training)
'''

MATCHER = '''import torch.nn as nn
from module.dropout_wrapper import DropoutWrapper


class Net(nn.Module):
    def __init__(self, ps):
        super().__init__()
        self.dropout_list = []
        self.scoring_list = nn.ModuleList()
        for p in ps:
            dropout = DropoutWrapper(p)
            self.dropout_list.append(dropout)
            self.scoring_list.append(nn.Linear(4, 2))

    def forward(self, x, task):
        return self.scoring_list[task](self.dropout_list[task](x))
'''

FILES = {"module/dropout_wrapper.py": WRAPPER, "mt_dnn/matcher.py": MATCHER}


def test_the_checked_folder_is_where_imports_resolve(tmp_path):
    # the dropout layers kept in a plain list are modules of another package of the project
    root = write_project(tmp_path / "repo", FILES, pyproject=None)
    assert places_found_by_check(root, "TRN705") == [("TRN705", "matcher.py", 8)]


def test_the_working_directory_is_where_imports_resolve(tmp_path):
    # `check mt_dnn/matcher.py` run in the repository's folder, as the bug benchmark and a user run it
    root = write_project(tmp_path / "repo", FILES, pyproject=None)
    found = run_check(root / "mt_dnn" / "matcher.py", "TRN705")  # run_check runs in the file's folder
    assert found == []  # from mt_dnn/, `module` is not importable: nothing says what DropoutWrapper is
    done = subprocess.run([sys.executable, "-m", "traindoctor", "check", "--format", "json", "--select", "TRN705",
                           "mt_dnn/matcher.py"], capture_output=True, text=True, cwd=root, timeout=300)
    assert done.returncode == 1, done.stderr
    assert [(f["code"], f["line"]) for f in json.loads(done.stdout)] == [("TRN705", 8)]


@pytest.mark.parametrize("marker", ["pyproject.toml", "setup.py"])
def test_a_marker_below_the_checked_folder_is_the_root(tmp_path, marker):
    # mt_dnn/ is its own project: its imports resolve from there, not from the checked folder
    root = write_project(tmp_path / "repo", FILES, pyproject=None)
    (root / "mt_dnn" / marker).write_text("")
    assert places_found_by_check(root, "TRN705") == []
