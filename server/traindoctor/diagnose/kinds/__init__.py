"""The registry of kind hooks: a kind is one YAML file under rules/signatures/ plus, only
where needed, one module here named after it (`cuda-oom` -> `cuda_oom.py`) with the hooks:

- `derive(facts, exception_text) -> dict`: facts computed from the extracted ones (sizes in
  bytes, which side of a device mismatch is on the CPU, a checkpoint key mapping).

Modules are found by name: adding a kind never edits a table.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType


@functools.cache
def hooks(kind: str) -> ModuleType | None:
    """The hooks module of `kind`, or None when the kind needs none."""
    name = kind.replace("-", "_")
    if not name.replace("_", "").isalnum():
        return None
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{name}":
            return None
        raise
