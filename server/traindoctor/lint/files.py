"""Which files a `check` of some paths covers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator

from ..config import ConfigError, load_config
from ..safegit import run_git

_SKIP_DIRS = {
    ".git", ".hg", ".svn", ".venv", "venv", "env", ".env", ".tox", ".nox", "node_modules", "__pycache__",
    "site-packages", ".mypy_cache", ".pytest_cache", ".ruff_cache", "build", "dist", ".eggs",
    ".ipynb_checkpoints",
}


def _is_virtualenv(folder: Path) -> bool:
    try:
        return (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir()
    except OSError:  # an unreadable folder: os.walk reports it when it gets there
        return False


def _report_error(path: Path, reason: str) -> None:
    print(f"{path}: error: {reason}", file=sys.stderr)


def _git_visible(folder: Path) -> set[Path] | None:
    """Files git does not ignore under `folder`, or None outside a work tree
    (or when the folder named on the command line is itself ignored: asked for
    explicitly, it is linted)."""
    try:
        ignored = run_git(["check-ignore", "-q", "."], cwd=folder)
        if ignored.returncode == 0:
            return None
        listed = run_git(["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "."], cwd=folder)
    except (OSError, subprocess.SubprocessError):
        return None
    if listed.returncode != 0:
        return None
    out = listed.stdout
    return {(folder / name).resolve() for name in out.decode("utf-8", "surrogateescape").split("\0") if name}


def python_files(paths: list[str], on_error: Callable[[Path, str], None] = _report_error) -> Iterator[Path]:
    """Files named on the command line, and the .py files and Jupyter notebooks
    under folders named there, skipping VCS folders, virtualenvs, git-ignored and
    excluded files (and `.ipynb_checkpoints`, Jupyter's autosave copies). A folder
    that cannot be listed is passed to `on_error` (default: one `path: error:
    reason` line on stderr) and the walk goes on."""
    seen: set[Path] = set()

    def walk_error(exc: OSError) -> None:
        on_error(Path(exc.filename or "?"), f"cannot read folder: {exc.strerror or exc}")

    for raw in paths:
        path = Path(raw)
        if path.is_file() or not path.exists():
            if path not in seen:
                seen.add(path)
                yield path
            continue
        visible = _git_visible(path)
        for root, dirs, files in os.walk(path, onerror=walk_error):
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
                try:
                    excluded = load_config(file).is_excluded(str(file))
                except ConfigError:
                    excluded = False  # linting it reports the configuration error
                except OSError as exc:
                    on_error(file, f"cannot read its configuration: {exc.strerror or exc}")
                    continue
                if excluded or file in seen:
                    continue
                seen.add(file)
                yield file
