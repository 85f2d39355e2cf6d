"""Context that decides what a finding says and how loud it is: the torch version of the
linted file's own project, test files, big notebooks."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from traindoctor.config import Config, is_test_file, parse_table
from traindoctor.lint import lint_source
from traindoctor.lint.analysis.environment import torch_version
from traindoctor.model import Severity

SAVE_LOAD = (
    "import torch\n"
    "def roundtrip(model, path):\n"
    "    torch.save(model, path)\n"
    "    return torch.load(path)\n"
)


def _project(root: Path, name: str, text: str) -> Path:
    (root / "src").mkdir(parents=True)
    (root / name).write_text(text)
    script = root / "src" / "train.py"
    script.write_text(SAVE_LOAD)
    return script


def test_the_torch_version_comes_from_the_files_own_project(tmp_path):
    old = _project(tmp_path / "old", "pyproject.toml", '[project]\ndependencies = ["torch==2.4.1"]\n')
    new = _project(tmp_path / "new", "requirements-train.txt", "numpy\ntorch==2.6.0\n")
    ranged = _project(tmp_path / "ranged", "requirements.txt", "torch>=2.0\n")
    assert torch_version(str(old)) == (2, 4)
    assert torch_version(str(new)) == (2, 6)
    assert torch_version(str(ranged)) == torch_version(None)  # the installed torch satisfies the bound
    codes = {p.parent.parent.name: [f for f in lint_source(SAVE_LOAD, str(p), Config()).findings
                                    if f.code == "TRN602"] for p in (old, new)}
    assert not codes["old"]  # weights_only=True became the default in 2.6
    assert "torch 2.6" in codes["new"][0].message


def test_check_reads_the_linted_files_project_not_the_working_folders(tmp_path):
    new = _project(tmp_path / "new", "requirements.txt", "torch==2.6.0\n")
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    (cwd / "requirements.txt").write_text("torch==2.4.0\n")
    result = subprocess.run([sys.executable, "-m", "traindoctor", "check", "--format", "json", str(new)],
                            capture_output=True, text=True, cwd=cwd, timeout=120)
    findings = json.loads(result.stdout)
    assert [f["code"] for f in findings] == ["TRN602"] and "torch 2.6" in findings[0]["message"]


@pytest.mark.parametrize("path, test", [("tests/test_model.py", True), ("pkg/tests/helpers.py", True),
                                        ("test/util.py", True), ("model_test.py", True), ("conftest.py", True),
                                        ("train.py", False), ("src/testing_utils.py", False),
                                        ("/home/me/test/project/src/pkg/train.py", False)])
def test_what_a_test_file_is(path, test):
    assert is_test_file(path) == test


BUGGY = ("import torch\ntotal = 0\nfor x, y in loader:\n    loss = criterion(model(x), y)\n"
         "    loss.backward()\n    optimizer.step()\n    optimizer.zero_grad()\n    total += loss\n")


def test_test_files_get_a_lower_default_severity():
    [in_script] = [f for f in lint_source(BUGGY, "train.py", Config()).findings if f.code == "TRN101"]
    [in_test] = [f for f in lint_source(BUGGY, "tests/test_train.py", Config()).findings if f.code == "TRN101"]
    assert in_script.severity == Severity.WARNING and in_test.severity == Severity.INFO


def test_test_severity_is_configurable():
    unchanged = parse_table({"test-severity": "default"})
    [found] = [f for f in lint_source(BUGGY, "tests/test_train.py", unchanged).findings if f.code == "TRN101"]
    assert found.severity == Severity.WARNING
    hint = parse_table({"test-severity": "hint"})
    [found] = [f for f in lint_source(BUGGY, "tests/test_train.py", hint).findings if f.code == "TRN101"]
    assert found.severity == Severity.HINT
    explicit = parse_table({"severity": {"TRN101": "error"}})  # a configured severity is kept
    [found] = [f for f in lint_source(BUGGY, "tests/test_train.py", explicit).findings if f.code == "TRN101"]
    assert found.severity == Severity.ERROR


def test_a_notebook_with_megabytes_of_images_is_linted_by_its_code(tmp_path):
    image = base64.b64encode(bytes(range(256)) * 9000).decode()  # ~3 MB of embedded output
    cells = [{"cell_type": "code", "execution_count": 1, "metadata": {}, "source": BUGGY.splitlines(True),
              "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"image/png": image}}]}]
    notebook = tmp_path / "big.ipynb"
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert notebook.stat().st_size > 2_000_000
    result = subprocess.run([sys.executable, "-m", "traindoctor", "check", "--format", "json", str(notebook)],
                            capture_output=True, text=True, timeout=120)
    assert [f["code"] for f in json.loads(result.stdout)] == ["TRN101"], result.stderr


LINEAR_PROBE = '''import torch
import torch.nn.functional as F


def train_probe(backbone, head, loader, optimizer):
    """Linear probe: the backbone stays in eval mode, only the head is trained."""
    for epoch in range(10):
        for x, y in loader:
            backbone.eval()
            optimizer.zero_grad()
            loss = F.cross_entropy(head(backbone(x)), y)
            loss.backward()
            optimizer.step()
'''


@pytest.mark.parametrize("intent", ["    \"\"\"Linear probe: the backbone stays in eval mode, only the head is trained.\"\"\"\n",
                                    "    # keep the frozen backbone in eval: BatchNorm statistics must not move\n"])
def test_a_documented_eval_mode_is_intent(intent):
    source = LINEAR_PROBE.replace(
        "    \"\"\"Linear probe: the backbone stays in eval mode, only the head is trained.\"\"\"\n", intent)
    assert not [f for f in lint_source(source, "p.py", Config()).findings if f.code == "TRN703"]
    undocumented = LINEAR_PROBE.replace(
        "    \"\"\"Linear probe: the backbone stays in eval mode, only the head is trained.\"\"\"\n", "")
    assert [f for f in lint_source(undocumented, "p.py", Config()).findings if f.code == "TRN703"]
