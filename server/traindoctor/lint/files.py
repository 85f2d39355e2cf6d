"""Which files a `check` of some paths covers."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Iterator

from ..config import load_config

_SKIP_DIRS = {
    ".git", ".hg", ".svn", ".venv", "venv", "env", ".env", ".tox", ".nox", "node_modules", "__pycache__",
    "site-packages", ".mypy_cache", ".pytest_cache", ".ruff_cache", "build", "dist", ".eggs",
    ".ipynb_checkpoints",
}


def _is_virtualenv(folder: Path) -> bool:
    return (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir()


def _git_visible(folder: Path) -> set[Path] | None:
    """Files git does not ignore under `folder`, or None outside a work tree
    (or when the folder named on the command line is itself ignored: asked for
    explicitly, it is linted)."""
    try:
        ignored = subprocess.run(["git", "-C", str(folder), "check-ignore", "-q", "."],
                                 capture_output=True, timeout=30)
        if ignored.returncode == 0:
            return None
        out = subprocess.run(
            ["git", "-C", str(folder), "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "."],
            capture_output=True, timeout=30, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {(folder / name).resolve() for name in out.decode("utf-8", "surrogateescape").split("\0") if name}


def python_files(paths: list[str]) -> Iterator[Path]:
    """Files named on the command line, and the .py files and Jupyter notebooks
    under folders named there, skipping VCS folders, virtualenvs, git-ignored and
    excluded files (and `.ipynb_checkpoints`, Jupyter's autosave copies)."""
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_file() or not path.exists():
            if path not in seen:
                seen.add(path)
                yield path
            continue
        visible = _git_visible(path)
        for root, dirs, files in os.walk(path):
            root_path = Path(root)
            dirs[:] = sorted(
                d for d in dirs
                if d not in _SKIP_DIRS and not d.endswith(".egg-info") and not _is_virtualenv(root_path / d)
            )
            for name in sorted(files):
                if not name.endswith((".py", ".pyi", ".ipynb")):
                    continue
                file = root_path / name
                if visible is not None and file.resolve() not in visible:
                    continue
                if load_config(file).is_excluded(str(file)) or file in seen:
                    continue
                seen.add(file)
                yield file
