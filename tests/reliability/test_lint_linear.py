"""`check` is linear in file size.

The work is counted, not timed: the number of Python function calls `lint_source` makes
on 2,000 and on 8,000 generated statements. Linear work gives a ratio of about 4; the
quadratic hot spots this guards against (facts rebuilt for every block) gave about 16.
A 40,000-statement file (1.7 MB, under the 2 MB limit) must also be linted, not refused,
within a cap that only catches a hang. Wall-clock figures are in bench/bench_reliability.py.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from reliability_helpers import PYTHON, env

from traindoctor.config import Config
from traindoctor.lint import lint_source

HANG_CAP_SECONDS = 180


def _statements(count: int) -> str:
    return "import torch\n" + "".join(f"value_{i:05d} = torch.zeros({i % 7 + 1}) * {i:05d}.0\n" for i in range(count))


def _calls_to_lint(source: str) -> int:
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(count)
    try:
        lint_source(source, "big.py", Config())
    finally:
        sys.setprofile(None)
    return calls


def test_lint_work_grows_linearly_with_the_number_of_statements():
    _calls_to_lint(_statements(50))  # imports and one-time catalog loading are not per-statement work
    small, large = _calls_to_lint(_statements(2_000)), _calls_to_lint(_statements(8_000))
    assert large < 4.4 * small, f"{small} calls for 2,000 statements, {large} for 8,000: superlinear"


@pytest.mark.slow
def test_40k_one_line_statements_are_linted_not_refused(tmp_path):
    source = _statements(40_000)
    assert 1.5e6 < len(source.encode()) < 2e6  # under the 2 MB limit: it must be linted, not refused
    path = tmp_path / "big.py"
    path.write_text(source)
    try:
        done = subprocess.run([PYTHON, "-m", "traindoctor", "check", str(path)], capture_output=True, text=True,
                              timeout=HANG_CAP_SECONDS, env=env())
    except subprocess.TimeoutExpired:
        pytest.fail(f"check of a {len(source) / 1e6:.1f} MB file did not finish within {HANG_CAP_SECONDS} s")
    assert done.returncode == 0, done.stderr
    assert "No problems found" in done.stdout
