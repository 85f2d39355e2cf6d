"""Blocks parsed together (runs of one-line statements, one parser call) give the same
module as each block parsed alone: same tree, same rendering settings, same errors."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
import torch

from traindoctor.lint.blocks import split_blocks
from traindoctor.lint import parsing
from traindoctor.lint.parsing import parse_module, parse_modules

TORCH = Path(torch.__file__).parent
REPO = Path(__file__).resolve().parents[2]

EDGE_CASES = (
    "import torch\n\n# a comment before\nx = 1\n   \ny = 2; z = 3  # trailing\n"
    "\n\n# two blank lines, then a one-line compound statement\nif x: y = 4\n"
    "w = [1,\n2]\nclass A: pass\n@decorate\ndef f(): return 1\nv = '''\n# not a comment\n'''\n"
    "u = 5\nmatch = 6\nlast = 7"  # the file's last line has no newline
)


def _sources() -> dict[str, str]:
    return {
        "nn/modules/module.py": (TORCH / "nn" / "modules" / "module.py").read_text(),
        "nn/functional.py": (TORCH / "nn" / "functional.py").read_text(),
        "examples": "".join(p.read_text() for p in sorted((REPO / "examples").glob("*.py"))),
        "edge cases": EDGE_CASES,
        "edge cases, CRLF": EDGE_CASES.replace("\n", "\r\n"),
        "many statements": "import torch\n" + "".join(f"v{i} = torch.zeros({i})\n" for i in range(450)),
    }


@pytest.mark.parametrize("name", list(_sources()))
def test_blocks_parsed_together_equal_blocks_parsed_alone(name: str, monkeypatch):
    texts = [block.text for block in split_blocks(_sources()[name])]
    calls = []
    real = cst.parse_module
    monkeypatch.setattr(parsing.cst, "parse_module", lambda text: calls.append(text) or real(text))
    modules = parse_modules(texts)
    monkeypatch.undo()
    for text, module in zip(texts, modules):
        alone = parse_module(text)
        assert module is not None
        assert module.deep_equals(alone), text
        assert module.code == text
        settings = ("default_indent", "default_newline", "has_trailing_newline", "encoding")
        assert [getattr(module, s) for s in settings] == [getattr(alone, s) for s in settings], text
    if name == "many statements":  # parsed 100 at a time (one at a time would pass the above too)
        assert len(calls) == 5 and len(texts) == 451


def test_a_block_that_does_not_parse_in_a_run_is_left_to_be_parsed_alone():
    texts = ["x = 1\n", "y = = 2\n", "z = 3\n"]
    modules = parse_modules(texts)
    assert modules[1] is None
    assert [m.code for m in modules if m is not None] == ["x = 1\n", "z = 3\n"]
    with pytest.raises(cst.ParserSyntaxError):
        parse_module(texts[1])
