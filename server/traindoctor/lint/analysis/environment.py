"""The torch version the rules reason about: the installed one (read without
importing torch), else the project's pinned requirement, else None (unknown)."""

from __future__ import annotations

import functools
import re
from importlib import metadata
from pathlib import Path

_PIN = re.compile(r"""["']?\btorch\s*(?:==|>=|~=|===)\s*v?(\d+)\.(\d+)""")


@functools.cache
def torch_version(start: str = ".") -> tuple[int, int] | None:
    try:
        parts = metadata.version("torch").split(".")
        return int(parts[0]), int(re.match(r"\d+", parts[1]).group())  # type: ignore[union-attr]
    except (metadata.PackageNotFoundError, ValueError, IndexError, AttributeError):
        pass
    folder = Path(start).resolve()
    for candidate in (folder, *folder.parents):
        for name in ("pyproject.toml", "requirements.txt", "setup.cfg", "setup.py", "environment.yml"):
            path = candidate / name
            if path.is_file():
                try:
                    match = _PIN.search(path.read_text(encoding="utf-8", errors="replace"))
                except OSError:
                    continue
                if match:
                    return int(match.group(1)), int(match.group(2))
    return None


def describe(version: tuple[int, int] | None) -> str:
    return f"torch {version[0]}.{version[1]}" if version else "an unknown torch version"


def workers_reseed_numpy(version: tuple[int, int] | None) -> bool:
    """Since 1.9, DataLoader workers seed `random`, `torch` and NumPy's global RNG
    from a base seed drawn from the parent's torch RNG (or the loader's generator)."""
    return version is None or version >= (1, 9)
