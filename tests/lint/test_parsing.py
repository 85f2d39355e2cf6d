"""Parsing without libcst's per-node validation builds the same trees and raises the same
errors as libcst's own parse_module."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
import torch

from traindoctor.lint.blocks import split_blocks
from traindoctor.lint.parsing import parse_module

TORCH = Path(torch.__file__).parent
REPO = Path(__file__).resolve().parents[2]
SOURCES = [TORCH / "nn" / "modules" / "module.py", TORCH / "nn" / "functional.py",
           *sorted((REPO / "examples").glob("*.py"))]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_blocks_parse_as_libcst_parses_them(path: Path):
    for block in split_blocks(path.read_text()):
        module = parse_module(block.text)
        assert module.deep_equals(cst.parse_module(block.text)) and module.code == block.text


def test_the_same_syntax_errors_and_validation_afterwards():
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("y = = 2\n")
    with pytest.raises(cst.CSTValidationError):  # nodes built outside a parse are validated again
        cst.Name("not a name")
