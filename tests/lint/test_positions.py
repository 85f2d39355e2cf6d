"""Block positions equal libcst's PositionProvider, node for node: whole blocks of real
code and of edge cases, and the per-statement positions of large class blocks (torch's own
big classes, a training script wrapped in one class)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
import torch
from libcst.metadata import MetadataWrapper, PositionProvider

from traindoctor.lint.blocks import split_blocks
from traindoctor.lint.positions import BlockPositions
from traindoctor.lint.walk import iter_nodes

TORCH = Path(torch.__file__).parent
REPO = Path(__file__).resolve().parents[2]


def _wrapped_example() -> str:
    source = (REPO / "examples" / "train_classifier.py").read_text() + (REPO / "examples" / "train_tagger.py").read_text()
    lines = source.splitlines()
    body = [line for line in lines if not line.startswith(("import", "from"))] * 2
    header = [line for line in lines if line.startswith(("import", "from"))]
    return "\n".join(header) + "\n\n@decorate(\n    1)\nclass Trainer(  # a comment\n        Base):\n" + "\n".join(
        ("\t" + line) if line.strip() else "" for line in body) + "\n\tx = 1; y = (2,\n  3)\n"


def _big_class_blocks() -> list[tuple[str, str]]:
    sources = {
        "nn.Module": (TORCH / "nn" / "modules" / "module.py").read_text(),
        "optim.Optimizer": (TORCH / "optim" / "optimizer.py").read_text(),
        "wrapped example": _wrapped_example(),
    }
    blocks = []
    for name, source in sources.items():
        for block in split_blocks(source):
            if block.text.count("\n") > 150 and block.text.lstrip().startswith(("class", "@", "#")):
                blocks.append((name, block.text))
    return blocks


@pytest.mark.parametrize("name, text", _big_class_blocks(), ids=lambda v: v if len(v) < 40 else "")
def test_per_statement_positions_equal_whole_block_positions(name: str, text: str):
    module = cst.parse_module(text)
    if not isinstance(module.body[0], cst.ClassDef):
        pytest.skip("not a class block")
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    positions = BlockPositions(module, text)
    klass = module.body[0]
    outer = (module, klass, klass.body)  # their ends need the whole block
    checked = 0
    for node in iter_nodes(module):
        if node in expected and node not in outer:
            assert positions.get(node) == expected[node], (name, type(node).__name__, cst.Module([]).code_for_node(node)[:60])
            checked += 1
    assert checked > 1000
    assert positions._whole is None, "the whole block was positioned: nothing was saved"
    for node in outer:
        assert positions.get(node) == expected[node]


EDGE_CASES = (
    "import torch\n\n# a comment before\nx = 1\n   \ny = 2; z = 3  # trailing\n"
    "if x: y = (4 +\n\t5)\nclass A: pass\n@decorate\ndef f(a, *, b=1) -> int:\n\treturn a  # tab\n"
    'v = """\n# not a comment\n"""\nw = f"{x!r:>{y}}" \\\n    + "z"\nlast = [1,\n2]'
)


@pytest.mark.parametrize("source", [
    (TORCH / "nn" / "functional.py").read_text(), (REPO / "examples" / "train_tagger.py").read_text(),
    EDGE_CASES, EDGE_CASES.replace("\n", "\r\n")], ids=["functional", "example", "edge", "edge-crlf"])
def test_whole_block_positions_equal_libcst(source: str):
    checked = 0
    for block in split_blocks(source):
        module = cst.parse_module(block.text)
        expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        positions = BlockPositions(module, block.text)
        for node in iter_nodes(module):
            assert positions.get(node) == expected[node], (type(node).__name__, block.text[:60])
            checked += 1
    assert checked > 20
