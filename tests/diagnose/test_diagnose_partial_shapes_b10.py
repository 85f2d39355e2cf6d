"""Partial-evidence shapes of the wild corpus's dev misses (2026-12-07): each paste is written here in
the shape a real one has (its prefixes and noise), so that the corpus stays unseen data; each shape has a
near miss that must not fire."""

from __future__ import annotations

from traindoctor.diagnose import diagnose_text
from traindoctor.diagnose.normalize import normalize


def _kind(text: str) -> str:
    return diagnose_text(text, correlate=False).kind


# --- a glog record's origin: torch.compile's warnings, the prefix that names the logger stripped ---

DYNAMO_WARNINGS = """\
[rank0]:W1105 10:12:44.201000 41122 torch/_dynamo/exc.py:514] [3/0_1] Backend compiler exception
[rank0]:W1105 10:12:44.201000 41122 torch/_dynamo/exc.py:514] [3/0_1]     While executing %tolist : [num_users=1] = call_method[target=tolist](args = (%counts,), kwargs = {})
[rank0]:W1105 10:12:44.201000 41122 torch/_dynamo/exc.py:514] [3/0_1]     Original traceback:
[rank0]:W1105 10:12:44.201000 41122 torch/_dynamo/exc.py:514] [3/0_1]       File "/work/model/router.py", line 41, in dispatch
"""


def test_the_logger_a_stripped_glog_prefix_named_is_evidence() -> None:
    lines = normalize(DYNAMO_WARNINGS)
    assert lines[0].origin == "torch/_dynamo/exc.py:514" and lines[0].text.startswith("[3/0_1]")
    assert _kind(DYNAMO_WARNINGS) == "compile"


def test_info_records_of_the_same_logger_are_no_failure() -> None:
    # TORCH_LOGS=+dynamo in a healthy run: INFO records from dynamo's files name no failure
    healthy = DYNAMO_WARNINGS.replace(":W1105", ":I1105")
    assert normalize(healthy)[0].origin == ""
    assert _kind(healthy) == "other"


def test_warnings_of_another_logger_are_not_compile() -> None:
    other = DYNAMO_WARNINGS.replace("torch/_dynamo/exc.py", "torch/distributed/checkpoint/utils.py")
    assert _kind(other) == "other"
