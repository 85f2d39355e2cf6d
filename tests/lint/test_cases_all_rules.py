"""Every rule over every case file (tests/lint/cases/*.py) and the examples:
a rule must not fire on another rule's cases unless the line says so.

Lines that must be flagged carry `# expect: TRN101` (several codes allowed);
the examples list theirs in EXAMPLE_EXPECTED below.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from traindoctor.config import Config
from traindoctor.lint import lint_source

HERE = Path(__file__).parent
REPO = HERE.parents[1]
CASES = sorted((HERE / "cases").glob("*.py"))
_EXPECT = re.compile(r"#\s*expect:\s*((?:TRN\d{3}[ ,]*)+)")
EXAMPLE_EXPECTED = {
    "train_classifier.py": {("TRN401", 49), ("TRN202", 54), ("TRN201", 58), ("TRN402", 65), ("TRN101", 69)},
    "train_tagger.py": {("TRN301", 30), ("TRN402", 41)},
}


def _expected(source: str) -> set[tuple[str, int]]:
    found = set()
    for number, line in enumerate(source.splitlines(), start=1):
        match = _EXPECT.search(line)
        if match:
            found.update((code, number) for code in re.findall(r"TRN\d{3}", match.group(1)))
    return found


def _found(path: Path) -> set[tuple[str, int]]:
    result = lint_source(path.read_text(), str(path), Config())
    assert result.error is None
    return {(f.code, f.range.start.line + 1) for f in result.findings}


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case_file(path: Path):
    assert _found(path) == _expected(path.read_text())


@pytest.mark.parametrize("name", sorted(EXAMPLE_EXPECTED))
def test_examples(name: str):
    assert _found(REPO / "examples" / name) == EXAMPLE_EXPECTED[name]
