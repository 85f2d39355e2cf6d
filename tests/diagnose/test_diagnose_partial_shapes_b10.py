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
    # dynamo's other modules warn in healthy runs too (a recompile): only its exception module counts
    recompiling = "".join(f"W1202 10:00:0{i}.000000 4242 torch/_dynamo/convert_frame.py:{800 + i}] recompiling forward\n"
                          for i in range(4))
    assert _kind(recompiling) == "other"


# --- a REPL session in which torch.cuda.is_available() prints False ---

REPL_CUDA_FALSE = """\
>>> import torch
>>> torch.__version__
'2.1.0+cu121'
>>> torch.cuda.is_available()
False
>>> torch.version.cuda
'12.1'
"""


def test_a_repl_showing_cuda_unavailable_is_the_cuda_environment() -> None:
    assert _kind(REPL_CUDA_FALSE) == "cuda-env"
    assert _kind("In [3]: print(torch.cuda.is_available())\nFalse\n") == "cuda-env"


def test_cuda_available_or_a_collect_env_report_is_not() -> None:
    assert _kind(REPL_CUDA_FALSE.replace("False", "True")) == "other"
    # the output belongs to the next input line, not to is_available()
    assert _kind(">>> torch.cuda.is_available()\n>>> x = False\n") == "other"
    # collect_env's summary of a CPU-only machine reports an environment, not a failure
    assert _kind("PyTorch version: 2.1.0+cpu\nIs debug build: False\nCUDA used to build PyTorch: None\n"
                 "Is CUDA available: False\n") == "other"


# --- the title pasted alone: the start of a known message, ended by a colon or an ellipsis ---


def test_a_title_that_starts_a_known_message_names_its_kind() -> None:
    assert _kind("Mat1 and Mat2 shapes cannot be multiplied:\n") == "shape-mismatch"
    assert _kind("stack expects each tensor to be equal size...") == "shape-mismatch"


def test_a_one_line_question_or_a_title_among_prose_is_not() -> None:
    assert _kind("I get the following error when I start training:\n") == "other"
    assert _kind("Mat1 and Mat2:") == "other"  # too short to name a message
    # a line among others is prose that may only mention the message
    assert _kind("I read that mat1 and mat2 shapes cannot be multiplied:\nbut mine are equal\n") == "other"


# --- faulthandler's dump: innermost frame first, `line N in func` with no comma ---

FAULTHANDLER = """\
Fatal Python error: Segmentation fault

Current thread 0x00007f3a2b7fe700 (most recent call first):
  File "/home/u/proj/data/loader.py", line 57 in decode
  File "/home/u/proj/data/loader.py", line 88 in __getitem__
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/_utils/fetch.py", line 51 in <listcomp>
  File "/home/u/proj/train.py", line 140 in main
"""


def test_a_faulthandler_dump_is_read_as_a_traceback_innermost_last() -> None:
    diagnosis = diagnose_text(FAULTHANDLER, correlate=False)
    assert diagnosis.location is not None
    assert (diagnosis.location.path, diagnosis.location.line) == ("/home/u/proj/data/loader.py", 57)
    texts = [line.text for line in normalize(FAULTHANDLER)]
    assert "Traceback (most recent call last):" in texts
    assert texts.index('  File "/home/u/proj/train.py", line 140, in main') < texts.index(
        '  File "/home/u/proj/data/loader.py", line 57, in decode')


def test_a_single_frame_in_prose_is_not_rewritten() -> None:
    prose = 'I think the bug is in File "/home/u/proj/a.py", line 3 in f\nbut I am not sure\n'
    assert [line.text for line in normalize(prose)][0] == 'I think the bug is in File "/home/u/proj/a.py", line 3 in f'
    one = '  File "/home/u/proj/a.py", line 3 in f\nsomething else\n'
    assert normalize(one)[0].text.endswith("line 3 in f")  # one frame line alone is not a dump
