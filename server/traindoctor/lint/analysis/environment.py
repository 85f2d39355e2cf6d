"""The torch version the rules reason about, for the linted file: the torch requirement of
its own project (the nearest pyproject.toml, requirements*.txt, setup.cfg, setup.py or
environment.yml above the file that names torch), else the installed torch (read without
importing it), else None (unknown). Not the working folder's project: `check` of another
checkout, or the editor's workspace, lints files that run with their own pins.

An exact pin (`==`, `~=`, `===`) is the version; a lower bound (`>=`) is the installed
version when that satisfies it, else the bound."""

from __future__ import annotations

import functools
import re
from importlib import metadata
from pathlib import Path

_PIN = re.compile(r"""["']?\btorch\s*(==|>=|~=|===)\s*v?(\d+)\.(\d+)""")
_PROJECT_FILES = ("pyproject.toml", "setup.cfg", "setup.py", "environment.yml")


def torch_version(path: str | None = None) -> tuple[int, int] | None:
    """The torch (major, minor) for the file at `path` (None: the installed one)."""
    folder = _folder_of(path)
    return _version_for(str(folder) if folder is not None else "")


@functools.cache
def _version_for(folder: str) -> tuple[int, int] | None:
    installed = _installed_version(("torch",))
    pin = _project_pin(Path(folder)) if folder else None
    if pin is None:
        return installed
    operator, version = pin
    if operator == ">=" and installed is not None and installed >= version:
        return installed
    return version


@functools.lru_cache(maxsize=256)
def _folder_of(path: str | None) -> Path | None:
    if not path or path.startswith("<"):
        return None
    try:
        found = Path(path).resolve()
    except (OSError, RuntimeError):
        return None
    return found if found.is_dir() else found.parent if found.parent.is_dir() else None


def _project_pin(folder: Path, pin: re.Pattern[str] = _PIN) -> tuple[str, tuple[int, int]] | None:
    """The requirement (`pin`: torch's by default) of the nearest project file above `folder`
    that names one: its operator and (major, minor)."""
    for candidate in (folder, *folder.parents):
        try:
            names = sorted(p.name for p in candidate.glob("requirements*.txt")) + list(_PROJECT_FILES)
        except OSError:
            continue
        for name in names:
            project = candidate / name
            if not project.is_file():
                continue
            try:
                match = pin.search(project.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                continue
            if match:
                return match.group(1), (int(match.group(2)), int(match.group(3)))
    return None


@functools.cache
def _installed_version(names: tuple[str, ...]) -> tuple[int, int] | None:
    """The installed (major, minor) of the first of `names` (one distribution's names) found."""
    for name in names:
        try:
            parts = metadata.version(name).split(".")
            return int(parts[0]), int(re.match(r"\d+", parts[1]).group())  # type: ignore[union-attr]
        except (metadata.PackageNotFoundError, ValueError, IndexError, AttributeError):
            continue
    return None


def describe(version: tuple[int, int] | None) -> str:
    return f"torch {version[0]}.{version[1]}" if version else "an unknown torch version"


def workers_reseed_numpy(version: tuple[int, int] | None) -> bool:
    """Since 1.9, DataLoader workers seed `random`, `torch` and NumPy's global RNG
    from a base seed drawn from the parent's torch RNG (or the loader's generator)."""
    return version is None or version >= (1, 9)


def package_version(path: str | None, names: tuple[str, ...]) -> tuple[int, int] | None:
    """The (major, minor) of another package the file's project runs with (one distribution
    under several names: `lightning`, `pytorch-lightning`), read like the torch version: the
    project's pin of it, a lower bound raised to the installed version when that satisfies it;
    else the installed one; else None (unknown)."""
    folder = _folder_of(path)
    return _package_version_for(str(folder) if folder is not None else "", names)


@functools.cache
def _package_version_for(folder: str, names: tuple[str, ...]) -> tuple[int, int] | None:
    installed = _installed_version(names)
    spelled = "|".join("[-_]".join(re.escape(part) for part in re.split("[-_]", n)) for n in names)
    pin = _project_pin(Path(folder), re.compile(
        rf"""["']?(?<![\w-])(?:{spelled})\s*(==|>=|~=|===)\s*v?(\d+)\.(\d+)""")) if folder else None
    if pin is None:
        return installed
    operator, version = pin
    if operator == ">=" and installed is not None and installed >= version:
        return installed
    return version
