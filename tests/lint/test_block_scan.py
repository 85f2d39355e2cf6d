"""The block split's scan of strings, comments and brackets finds the same top-level
statements as Python's parser (blocks.scanned_statements against _parsed_statements), and a
syntax error only a parser sees is reported as the parser reports it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from traindoctor.lint import lint_source
from traindoctor.lint.blocks import SourceSyntaxError, scanned_statements, source_lines, split_blocks

REPO = Path(__file__).resolve().parents[2]
SOURCES = [REPO / "examples" / "train_classifier.py", REPO / "examples" / "train_tagger.py",
           Path(torch.__file__).parent / "optim" / "sgd.py", Path(torch.__file__).parent / "nn" / "functional.py"]
SNIPPETS = ["'''\n", '"""\n', "x = (1,\n", ")\n", "    y = 2 \\\n", "\\\n", "else:\n", "except Exception:\n",
            "@torch.no_grad()\n", "# comment\n", "\n", "def f():\n", "    return 1\n", "a = 1; b = 2\n",
            "s = 'it''s'\n", "t = f\"{x!r}\" \\\n", "match = 3\n", "class A: pass\n", "    '''doc\n", "'''x'''\n"]

edit = st.tuples(st.sampled_from(["insert", "delete", "replace"]), st.integers(0, 100_000), st.sampled_from(SNIPPETS))


def _apply(lines: list[str], change: tuple[str, int, str]) -> list[str]:
    kind, at, snippet = change
    lines = list(lines)
    at = at % (len(lines) + 1)
    if kind == "insert":
        lines.insert(at, snippet)
    elif at < len(lines):
        if kind == "delete":
            del lines[at]
        else:
            lines[at] = snippet
    return lines


def _expected_error(text: str) -> str | None:
    try:
        ast.parse(text)
    except SyntaxError as exc:
        where = f" at line {exc.lineno}" if exc.lineno else ""
        return f"syntax error{where}: {exc.msg or 'invalid syntax'}"
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SOURCES), st.lists(edit, min_size=1, max_size=4))
def test_the_scan_splits_as_the_parser_does_and_errors_stay_the_parsers(path: Path, edits):
    lines = path.read_text().splitlines(keepends=True)
    for change in edits:
        lines = _apply(lines, change)
    text = "".join(lines)
    expected = _expected_error(text)
    if expected is None:
        assert split_blocks(text) == split_blocks(text, exactly=True)
    else:
        assert lint_source("import torch\n" + text if not text.startswith("import torch") else text).error \
            is not None


CASES = {
    "a string's lines at column 0": 'x = """\ndef f():\n    pass\n"""\ny = 1\n',
    "brackets over lines": "x = foo(1,\n2)\nif x:\n    y = [\n0]\nz = 3\n",
    "a backslash continuation": "x = 1 + \\\n2\ny = 3\n",
    "clauses at column 0": "try:\n    a()\nexcept E:\n    b()\nelse:\n    c()\nfinally:\n    d()\nz = 1\n",
    "decorators with comments between": "@a\n# c\n@b(1,\n   2)\ndef f():\n    pass\n# trailing\n",
    "statements sharing a line": "a = 1; b = 2\nif a: b = 3\n",
    "a raw string ending in an escaped quote": "x = r'\\''\ny = 1\n",
    "a single-quoted string continued over a newline": "x = 'a\\\nb'\ny = 1\n",
    "comments and blank lines after a body": "def f():\n    x = 1\n\n    # note\n# top\n\ny = 2\n",
}


@pytest.mark.parametrize("source", CASES.values(), ids=CASES.keys())
def test_edge_cases_split_as_the_parser_splits(source):
    assert scanned_statements(source, source_lines(source)) is not None  # the scan's own answer
    assert split_blocks(source) == split_blocks(source, exactly=True)


def test_the_scan_leaves_to_the_parser_what_it_cannot_tell():
    for source in ("match x:\n    case 1:\n        pass\n", "x = 1\r\ny = 2\r\n", "x = 1 + \\\n# c\ny = 2\n",
                   "def f():\n    return 1 \\\n\nz = 1\n",  # continued into a blank line: ast ends it before
                   "def f():\n\\\n    return 1\n",  # a line that only continues: indented as the next one
                   "x = (1,\n", "x = '''\n", "    x = 1\n", "else:\n    pass\n"):
        assert scanned_statements(source, source_lines(source)) is None, source


def test_a_syntax_error_only_a_parser_sees_is_reported_as_the_parser_reports_it():
    source = "import torch\nx = 1 +\ny = 2\n"
    assert scanned_statements(source, source_lines(source)) is not None  # the scan lets it through
    with pytest.raises(SourceSyntaxError):
        split_blocks(source, exactly=True)
    assert lint_source(source).error == _expected_error(source)
