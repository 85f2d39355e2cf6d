"""A lint frees its parse trees by reference counting as soon as its cache goes.

The engine pauses the cycle collector while it lints (engine.collector_paused). A
reference cycle through the file model kept every tree of the file alive until the
collector next ran: on a 2 MB file, that collection walked millions of nodes (half a
second), and `check` over many files piled trees up between collections."""

from __future__ import annotations

import gc
from pathlib import Path

import libcst as cst

from traindoctor.config import Config
from traindoctor.lint import lint_source

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_lint_leaves_no_parse_tree_to_the_cycle_collector():
    source = "".join(path.read_text() for path in sorted(EXAMPLES.glob("*.py")))
    config = Config(select=("all",))
    assert lint_source(source, "examples.py", config).findings  # rules ran and concluded
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        lint_source(source, "examples.py", config)
        gc.collect()
        left = [obj for obj in gc.garbage if isinstance(obj, cst.CSTNode)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_enabled:
            gc.enable()
    assert left == []
