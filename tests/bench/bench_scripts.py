"""Import a script of bench/ as a module, for tests of its pure logic."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load_bench_script(relative: str, name: str) -> ModuleType:
    """bench/<relative> as module `name`, registered in sys.modules (dataclasses look a module up
    by name)."""
    spec = importlib.util.spec_from_file_location(name, BENCH / relative)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
