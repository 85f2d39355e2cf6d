"""Property: no text makes diagnosis raise, and the result is always well-formed."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from traindoctor.diagnose import KINDS, diagnose_text, render_text
from diagnose_helpers import DATA

FRAGMENTS = [
    "Traceback (most recent call last):", '  File "x.py", line 3, in f', "    y = g()", "    ^^^^",
    "RuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB", "Original Traceback (most recent call last):",
    "Caught ValueError in DataLoader worker process 0.", "[rank1]: ", "\x1b[31m", "\r", "Killed",
    "The above exception was the direct cause of the following exception:", "Root Cause (first observed failure):",
    "  rank      : 1 (local_rank: 1)", "  exitcode  : -9 (pid: 12)", "Cell In[3], line 5", "----> 5 x",
    "│ /a.py:3 in f │", "╭─ Traceback (most recent call last) ─╮", "╰──╯", "  | ", "+-+---- 1 ----",
    '{"message": {"message": "x", "extraInfo": {"py_callstack": 3}}}', "Error(s) in loading state_dict for M:",
    "size mismatch for a: copying a param with shape torch.Size([1]) from checkpoint, the shape in current model is",
    "mat1 and mat2 shapes cannot be multiplied (1x2 and 3x4)", "Function 'X' returned nan values in its 0th output.",
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=X, Timeout(ms)=5) ran for 9 milliseconds",
]


def _check(text) -> None:
    diagnosis = diagnose_text(text, correlate=False)
    assert diagnosis.kind in KINDS
    assert 0.0 <= diagnosis.confidence <= 1.0
    assert "internal_error" not in diagnosis.details, diagnosis.details
    json.dumps(diagnosis.to_json())
    render_text(diagnosis)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_arbitrary_text_never_raises(text: str) -> None:
    _check(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30)), max_size=30).map("\n".join))
def test_traceback_like_text_never_raises(text: str) -> None:
    _check(text)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    _check(data)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=4000), st.integers(min_value=0, max_value=4000))
def test_truncated_real_logs_never_raise(start: int, length: int) -> None:
    text = (DATA / "formats" / "ranks_oom_fragmentation.log").read_text()
    _check(text[start:start + length])
