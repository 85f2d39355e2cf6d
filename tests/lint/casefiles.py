"""Shared by the lint tests: case files mark the lines that must be flagged
with `# expect: TRN101` (several codes allowed, comma-separated)."""

from __future__ import annotations

import re

from traindoctor.config import Config
from traindoctor.lint import lint_source

CONFIG = Config(select=("all",))  # default and strict rules
_EXPECT = re.compile(r"#\s*expect:\s*((?:TRN\d{3}[ ,]*)+)")


def expected_lines(source: str, codes: tuple[str, ...] | None = None) -> list[tuple[int, str]]:
    """The `# expect:` markers as sorted (1-based line, code) pairs."""
    found = []
    for number, line in enumerate(source.splitlines(), start=1):
        match = _EXPECT.search(line)
        if match:
            found += [(number, code) for code in re.findall(r"TRN\d{3}", match.group(1))
                      if codes is None or code in codes]
    return sorted(found)


def findings_of(source: str, codes: tuple[str, ...] | None = None, path: str = "case.py") -> list[tuple[int, str]]:
    """What the engine reports, as sorted (1-based line, code) pairs."""
    result = lint_source(source, path, CONFIG)
    assert result.error is None, result.error
    return sorted((f.range.start.line + 1, f.code) for f in result.findings if codes is None or f.code in codes)
