"""Every rule over every case file (tests/lint/cases/*.py) and the examples:
a rule must not fire on another rule's cases unless the line says so, and the
fixes of all rules together must parse, converge and clear what they fix.

Lines that must be flagged carry `# expect: TRN101` (several codes allowed);
the examples list theirs in EXAMPLE_EXPECTED below.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from casefiles import CONFIG, expected_lines, findings_of

from traindoctor.lint import fix_source, lint_source

HERE = Path(__file__).parent
REPO = HERE.parents[1]
CASES = sorted((HERE / "cases").glob("*.py"))
EXAMPLE_EXPECTED = {
    "train_classifier.py": [(54, "TRN202"), (58, "TRN201"), (65, "TRN402"), (69, "TRN101")],
    "train_tagger.py": [(30, "TRN301"), (41, "TRN402")],
}


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case_file_findings(path: Path):
    source = path.read_text(encoding="utf-8")
    assert findings_of(source, path=str(path)) == expected_lines(source)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case_file_fixes_parse_converge_and_clear_safe_findings(path: Path):
    source = path.read_text(encoding="utf-8")
    fixed, _ = fix_source(source, str(path), CONFIG)
    ast.parse(fixed)
    assert fix_source(fixed, str(path), CONFIG)[0] == fixed
    left = [f for f in lint_source(fixed, str(path), CONFIG).findings if f.fix is not None and f.fix.safe]
    assert left == []


@pytest.mark.parametrize("name", sorted(EXAMPLE_EXPECTED))
def test_examples(name: str):
    path = REPO / "examples" / name
    assert findings_of(path.read_text(encoding="utf-8"), path=str(path)) == EXAMPLE_EXPECTED[name]
