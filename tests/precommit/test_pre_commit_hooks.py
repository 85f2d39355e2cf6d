"""The pre-commit hooks in .pre-commit-hooks.yaml, run by pre-commit itself.

A snapshot of this working tree becomes a git repository that a temporary project names
in its .pre-commit-config.yaml, exactly as a user's project names ours: pre-commit
installs traindoctor into its own virtualenv (from PyPI, as for any user) and runs the
hook on the project's files. The environment is built once per test session.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "tests" / "notebooks" / "data" / "colab_training.ipynb"
BUGGY = """import torch
total = 0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    total += loss
"""

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


def _git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True,
                          timeout=120).stdout.strip()


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory) -> tuple[str, str]:
    """This working tree (committed or not, without ignored files) as a git repository: (path, rev)."""
    snapshot = tmp_path_factory.mktemp("traindoctor-repo")
    files = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=REPO).split("\0")
    for name in filter(None, files):
        source = REPO / name
        if source.is_file():
            (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, snapshot / name)
    _git("init", "-q", cwd=snapshot)
    _git("add", "-A", cwd=snapshot)
    _git("commit", "-q", "-m", "snapshot", cwd=snapshot)
    return str(snapshot), _git("rev-parse", "HEAD", cwd=snapshot)


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


def _project(root: Path, hook_repo: tuple[str, str], hook: str) -> Path:
    root.mkdir()
    _git("init", "-q", cwd=root)
    (root / "train.py").write_text(BUGGY)
    (root / "clean.py").write_text("import torch\nx = torch.zeros(3)\n")
    shutil.copy(NOTEBOOK, root / "explore.ipynb")
    (root / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo[0]}\n    rev: {hook_repo[1]}\n    hooks:\n      - id: {hook}\n")
    _git("add", "-A", cwd=root)
    return root


def _pre_commit(root: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "pre_commit", "run", "--color", "never", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=1100)


def test_the_check_hook_fails_on_findings_in_files_and_notebooks(tmp_path, hook_repo, pre_commit_home):
    root = _project(tmp_path / "project", hook_repo, "traindoctor-check")
    result = _pre_commit(root, pre_commit_home, "--all-files")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "traindoctor check" in result.stdout and "Failed" in result.stdout
    assert "train.py:6:5: TRN101 " in result.stdout
    assert "explore.ipynb:cell 3:16:5: TRN101 " in result.stdout
    assert "clean.py" not in result.stdout.split("Failed", 1)[1].replace("in 3 files", "")

    (root / "train.py").write_text(BUGGY.replace("total += loss", "total += loss.item()"))
    shutil.copy(REPO / "tests" / "notebooks" / "data" / "r_kernel.ipynb", root / "explore.ipynb")
    _git("add", "-A", cwd=root)
    passed = _pre_commit(root, pre_commit_home, "--all-files")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout


def test_the_fix_hook_rewrites_files_and_notebooks_then_passes(tmp_path, hook_repo, pre_commit_home):
    root = _project(tmp_path / "project", hook_repo, "traindoctor-fix")
    before = json.loads((root / "explore.ipynb").read_text(encoding="utf-8"))
    result = _pre_commit(root, pre_commit_home, "--all-files")
    assert result.returncode == 1, result.stdout + result.stderr  # pre-commit: "files were modified by this hook"
    assert "total += loss.item()" in (root / "train.py").read_text()
    after = json.loads((root / "explore.ipynb").read_text(encoding="utf-8"))
    assert "    running += loss.item()  # « running » loss\n" in after["cells"][2]["source"]
    assert [c.get("outputs") for c in after["cells"]] == [c.get("outputs") for c in before["cells"]]
    _git("add", "-A", cwd=root)
    again = _pre_commit(root, pre_commit_home, "--all-files")
    assert again.returncode == 0, again.stdout + again.stderr
