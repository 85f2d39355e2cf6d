"""The package as a user installs it: a wheel that builds without warnings, installed into a
fresh virtualenv without torch, where `check` and `diagnose` of a log work (they never import
torch) and `python -m traindoctor` is the same command as `traindoctor`."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("wheel")
    # Build from a copy of the tracked files: setuptools writes build/ into the source tree,
    # and another test (or xdist worker) building from the same tree would race on it.
    source = tmp_path_factory.mktemp("source")
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True,
                             timeout=60).stdout.decode().split("\0")
    for name in filter(None, tracked):
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(out), str(source)],
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    [built] = out.glob("traindoctor-*.whl")
    return built, build.stdout + build.stderr


def test_the_wheel_builds_without_deprecation_warnings(wheel):
    _built, log = wheel
    offending = [line for line in log.splitlines()
                 if "SetuptoolsDeprecationWarning" in line or "SetuptoolsWarning" in line
                 or "is deprecated" in line or "_DeprecatedConfig" in line]
    assert not offending, "\n".join(offending)


def test_installed_without_torch_check_and_diagnose_work(wheel, tmp_path: Path):
    built, _log = wheel
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", str(built)], capture_output=True, text=True,
                             timeout=600)
    assert install.returncode == 0, install.stderr[-3000:]
    assert subprocess.run([str(python), "-c", "import torch"], capture_output=True).returncode != 0

    version = subprocess.run([str(env_dir / "bin" / "traindoctor"), "--version"], capture_output=True, text=True,
                             timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("traindoctor ")
    check = subprocess.run([str(python), "-m", "traindoctor", "check", "examples/"], cwd=REPO, capture_output=True,
                           text=True, timeout=120)
    assert check.returncode == 1, check.stderr  # the examples hold bugs on purpose
    assert "TRN101" in check.stdout and "TRN000" not in check.stdout
    diagnose = subprocess.run([str(python), "-m", "traindoctor", "diagnose", "examples/tracebacks/cuda_oom.log"],
                              cwd=REPO, capture_output=True, text=True, timeout=120)
    assert diagnose.returncode == 1, diagnose.stderr
    assert "out of memory" in diagnose.stdout.lower()
