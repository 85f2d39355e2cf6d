"""`traindoctor diagnose` end to end: formats, stdin, exit codes, bad input, --record."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from diagnose_helpers import DATA, REPO

TRAINDOCTOR = [sys.executable, "-m", "traindoctor"]
JSON_KEYS = {"kind", "mode", "title", "root_cause", "evidence", "fixes", "confidence", "location", "frames",
             "exception", "related_findings", "rank", "details", "hypotheses", "references", "cause_location"}


def _run(*args: str, stdin: bytes | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([*TRAINDOCTOR, "diagnose", *args], input=stdin, capture_output=True, cwd=cwd, timeout=60)


def test_json_output_has_exactly_the_documented_keys() -> None:
    done = _run(str(DATA / "dev" / "tb007.txt"), "--format", "json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert set(data) == JSON_KEYS
    assert data["kind"] == "cuda-oom" and data["mode"] == "oom"
    assert set(data["location"]) == {"path", "line", "function", "code", "is_user"}
    assert data["location"]["line"] == 161
    assert all(set(f) == {"title", "detail"} for f in data["fixes"])
    assert data["exception"]["type"] == "torch.OutOfMemoryError"
    assert 0 <= data["confidence"] <= 1
    assert data["hypotheses"][0]["kind"] == "cuda-oom"
    assert data["hypotheses"][0]["confidence"] == data["confidence"]
    assert all(set(h) == {"kind", "cause", "confidence", "evidence", "fixes", "check"} for h in data["hypotheses"])


def test_text_output_from_stdin() -> None:
    done = _run("-", stdin=(DATA / "dev" / "tb002.txt").read_bytes())
    assert done.returncode == 1
    out = done.stdout.decode()
    assert out.startswith("CUDA out of memory: 86.00 MiB requested")
    assert "  at train.py:228 in main" in out
    assert "\n  1. " in out and "Fixes:" in out


def test_nothing_recognised_exits_0_and_a_recognised_failure_1() -> None:
    done = _run("-", stdin=b"all good, training finished\n")
    assert done.returncode == 0
    assert b"No recognisable failure" in done.stdout


def test_binary_and_non_utf8_input_is_read() -> None:
    latin1 = 'Traceback (most recent call last):\n  File "m\xe9t\xe9o.py", line 4, in <module>\n    x.backward()\n' \
             "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn\n"
    done = _run("-", "--format", "json", stdin=latin1.encode("latin-1"))
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["kind"] == "no-grad"
    garbage = bytes(range(1, 256)) * 50  # no NUL: undecodable, but text-like
    done = _run("-", stdin=garbage)
    assert done.returncode == 0 and not done.stderr


def test_binary_input_is_named_binary_as_curves_does(tmp_path: Path) -> None:
    image = tmp_path / "weights.pt"
    image.write_bytes(b"PK\x03\x04\x00\x00" + bytes(range(256)) * 20)
    done = _run(str(image))
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode() == f"traindoctor diagnose: {image}: a binary file, not a training log\n"
    piped = _run("-", stdin=bytes(range(256)) * 50)
    assert piped.returncode == 2 and b"a binary file" in piped.stderr


def test_unreadable_input_is_a_one_line_error(tmp_path: Path) -> None:
    missing = _run(str(tmp_path / "nope.log"))
    assert missing.returncode == 2
    assert missing.stderr.decode().startswith("traindoctor diagnose: cannot read")
    assert b"Traceback" not in missing.stderr
    directory = _run(str(tmp_path))
    assert directory.returncode == 2 and b"is a directory" in directory.stderr


def test_record_writes_markdown(tmp_path: Path) -> None:
    done = _run(str(DATA / "formats" / "killed.log"), "--record", str(tmp_path / "records"))
    assert done.returncode == 1, done.stderr
    records = list((tmp_path / "records").glob("*-host-oom.md"))
    assert len(records) == 1
    text = records[0].read_text()
    for heading in ("## What failed", "## Root cause", "## Evidence", "## Fixes (best first)", "## Environment"):
        assert heading in text
    assert "epoch 0, step 3000, step total 9375" in text
    assert "**torch:** 2.13.0" in text and "**python:**" in text and "**git_commit:**" in text


def test_demo_log_points_at_the_example_and_its_lint_finding() -> None:
    done = _run("examples/tracebacks/cuda_oom.log", "--format", "json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["kind"] == "cuda-oom"
    example = REPO / "examples" / "train_classifier.py"
    assert data["location"]["path"].endswith("examples/train_classifier.py")
    # The log quotes the example's source: when the example changes, update the log's frames.
    source = example.read_text().splitlines()
    quoted = [f for f in data["frames"] if f["path"].endswith("examples/train_classifier.py")]
    assert len(quoted) == 3
    for frame in quoted:
        assert source[frame["line"] - 1].strip() == frame["code"], f"examples/tracebacks/cuda_oom.log is stale: {frame}"
    # correlation: the TRN101 accumulation in the example is the line to change
    assert "TRN101" in [f["code"] for f in data["related_findings"]]
    assert data["details"]["line_to_change"]["code"] == "TRN101"


def test_text_output_prints_the_correlated_fix_as_a_diff() -> None:
    done = _run("examples/tracebacks/cuda_oom.log")
    assert done.returncode == 1, done.stderr
    out = done.stdout.decode()
    assert "Fix to apply (TRN101" in out, out
    diff = out.split("Fix to apply", 1)[1]
    removed = [l.strip() for l in diff.splitlines() if l.strip().startswith("-") and not l.strip().startswith("---")]
    added = [l.strip() for l in diff.splitlines() if l.strip().startswith("+") and not l.strip().startswith("+++")]
    assert removed and added and any("total_loss += loss.detach()" in l for l in added), diff
    assert "examples/train_classifier.py" in diff
