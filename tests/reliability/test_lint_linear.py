"""`check` is linear in file size: generated 40k-statement and 1 MB files lint within a generous cap.

Tied to issue 9 (branch i9model), which rewrites the hot spots (`_object_kinds` in
TRN101, `_module_level` in `_local_bindings.py`). Until that engine is merged
these cases do not finish in time here, hence xfail(strict=False): the lead flips
them to plain tests after merging i9model.
"""

from __future__ import annotations

import subprocess

import pytest
from reliability_helpers import PYTHON, env

CAP_SECONDS = 30  # the goal is seconds; the cap only catches superlinear blow-ups

NEEDS_I9MODEL = pytest.mark.xfail(
    strict=False, reason="issue 9 (i9model): lint is quadratic in statements until its semantic model is merged")


def _statements(count: int) -> str:
    return "import torch\n" + "".join(f"value_{i:05d} = torch.zeros({i % 7 + 1}) * {i:05d}.0\n" for i in range(count))


def _lint_within_cap(tmp_path, source: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "big.py"
    path.write_text(source)
    try:
        return subprocess.run([PYTHON, "-m", "traindoctor", "check", str(path)], capture_output=True, text=True,
                              timeout=CAP_SECONDS, env=env())
    except subprocess.TimeoutExpired:
        pytest.fail(f"check of a {len(source) / 1e6:.1f} MB file did not finish within {CAP_SECONDS} s")


@NEEDS_I9MODEL
def test_40k_one_line_statements_lint_within_the_cap(tmp_path):
    source = _statements(40_000)
    assert 1.5e6 < len(source.encode()) < 2e6  # under the 2 MB limit: it must be linted, not refused
    done = _lint_within_cap(tmp_path, source)
    assert done.returncode == 0, done.stderr


@NEEDS_I9MODEL
def test_a_1_mb_file_lints_within_the_cap(tmp_path):
    source = _statements(25_000)
    assert 0.9e6 < len(source.encode()) < 1.2e6
    done = _lint_within_cap(tmp_path, source)
    assert done.returncode == 0, done.stderr
