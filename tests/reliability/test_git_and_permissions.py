"""git cannot run repository-configured programs; unreadable paths are one line each."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
from reliability_helpers import PYTHON, env, traindoctor

OOM_LOG = (
    "Traceback (most recent call last):\n"
    '  File "{path}", line 3, in <module>\n'
    "    loss.backward()\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
    "of 15.77 GiB of which 1.19 GiB is free.\n"
)

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _hostile_repository(folder: Path, marker: Path) -> None:
    """A repository whose config runs a script (as a cloned one could) on every status/ls-files."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True, env=env())
    script = folder / "fsmonitor.sh"
    script.write_text(f"#!/bin/sh\necho ran >> {marker}\nexit 1\n")
    script.chmod(0o755)
    hooks = folder / ".git" / "hooks"
    for name in ("post-index-change", "post-checkout", "pre-commit"):
        (hooks / name).write_text(f"#!/bin/sh\necho hook {name} >> {marker}\n")
        (hooks / name).chmod(0o755)
    subprocess.run(["git", "-C", str(folder), "config", "core.fsmonitor", str(script)], check=True, env=env())
    subprocess.run(["git", "-C", str(folder), "config", "core.pager", f"sh -c 'echo pager >> {marker}'"],
                   check=True, env=env())
    (folder / "train.py").write_text("import torch\n")


@needs_git
def test_the_fsmonitor_control_runs_the_marker(tmp_path):
    # The test's own control: plain git does run the configured program here.
    repo, marker = tmp_path / "repo", tmp_path / "marker"
    _hostile_repository(repo, marker)
    subprocess.run(["git", "-C", str(repo), "status"], capture_output=True, env=env())
    assert marker.exists()


@needs_git
def test_check_never_runs_the_repository_fsmonitor(tmp_path):
    repo, marker = tmp_path / "repo", tmp_path / "marker"
    _hostile_repository(repo, marker)
    (repo / "ignored").mkdir()
    (repo / ".gitignore").write_text("ignored/\n")
    (repo / "ignored" / "skip.py").write_text("import torch\n")
    done = traindoctor("check", str(repo), cwd=tmp_path)
    assert done.returncode == 0, done
    assert "1 file" in done.stdout  # git still decided what is ignored
    assert not marker.exists(), marker.read_text()


@needs_git
def test_record_runs_no_git_in_a_folder_named_by_the_log(tmp_path):
    repo, marker = tmp_path / "victim", tmp_path / "marker"
    _hostile_repository(repo, marker)
    log = tmp_path / "crash.log"
    log.write_text(OOM_LOG.format(path=repo / "train.py"))
    project = tmp_path / "project"
    project.mkdir()
    done = traindoctor("diagnose", str(log), "--record", str(tmp_path / "records"), cwd=project)
    assert done.returncode == 1, done  # the OOM is recognised
    assert not marker.exists(), marker.read_text()
    record = next((tmp_path / "records").glob("*.md")).read_text()
    assert "not a git checkout" in record  # the current project is not a repository


@needs_git
def test_record_takes_the_current_projects_commit_safely(tmp_path):
    repo, marker = tmp_path / "project", tmp_path / "marker"
    _hostile_repository(repo, marker)
    subprocess.run(["git", "-C", str(repo), "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
                    "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"],
                   check=True, env=env())
    marker.unlink(missing_ok=True)
    head = subprocess.run(["git", "-C", str(repo), "-c", "core.fsmonitor=false", "rev-parse", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    log = tmp_path / "crash.log"
    log.write_text(OOM_LOG.format(path="/elsewhere/train.py"))
    done = traindoctor("diagnose", str(log), "--record", str(tmp_path / "records"), cwd=repo)
    assert done.returncode == 1, done  # the OOM is recognised
    record = next((tmp_path / "records").glob("*.md")).read_text()
    assert head in record
    assert not marker.exists(), marker.read_text()


def _as_nobody() -> list[str] | None:
    """A prefix that runs a command as an unprivileged user (tests run as root, who reads everything)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv:
        return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    runuser = shutil.which("runuser")
    if runuser:
        return [runuser, "-u", "nobody", "--"]
    return None


@pytest.fixture
def open_tmp():
    """A temporary folder every user may enter (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="traindoctor-perm-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_an_unreadable_folder_and_file_are_one_line_each_and_the_rest_is_linted(open_tmp):
    prefix = _as_nobody()
    if prefix is None:
        pytest.skip("running as root without setpriv or runuser: no way to be denied a read")
    tmp_path = open_tmp
    project = tmp_path / "project"
    (project / "secret").mkdir(parents=True)
    (project / "secret" / "hidden.py").write_text("import torch\n")
    (project / "locked.py").write_text("import torch\n")
    (project / "ok.py").write_text(
        "import torch\n\n\ndef train(model, loader, criterion):\n    total = 0\n    for x, y in loader:\n"
        "        loss = criterion(model(x), y)\n        loss.backward()\n        total += loss\n    return total\n"
    )
    os.chmod(project / "secret", 0o700)
    os.chmod(project / "locked.py", 0o600)
    for path in (tmp_path, project, project / "ok.py"):
        path.chmod(path.stat().st_mode | stat.S_IROTH | stat.S_IXOTH)
    # The interpreter and the package must be readable by nobody: they are, under the usual umask.
    done = subprocess.run(prefix + [PYTHON, "-m", "traindoctor", "check", "--jobs", "1", "project"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=env(HOME=str(tmp_path), PYTHONDONTWRITEBYTECODE="1"))
    if "Permission denied" in done.stderr and "traindoctor" in done.stderr and "No module" in done.stderr:
        pytest.skip("the package is not readable by an unprivileged user here")
    errors = sorted(done.stderr.strip().splitlines())
    assert errors == ["project/secret: error: cannot read folder: Permission denied"], done.stderr
    assert "project/locked.py:1:1: TRN000 cannot lint: cannot read: Permission denied" in done.stdout
    assert "TRN101" in done.stdout  # the readable file was still linted
    assert done.returncode == 1
