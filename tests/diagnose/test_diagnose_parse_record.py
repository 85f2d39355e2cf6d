"""The parser's public view (chains, user frames) and the Markdown debug record."""

from __future__ import annotations

import subprocess
from pathlib import Path

from traindoctor.diagnose import diagnose_text, parse_tracebacks
from traindoctor.diagnose.parse import is_user_path
from traindoctor.diagnose.record import write_record
from diagnose_helpers import DATA


def test_chain_keeps_every_exception_in_order() -> None:
    [traceback] = parse_tracebacks((DATA / "formats" / "chained_cause.log").read_text())
    assert traceback.exception.type == "trainer.TrainingError"
    assert [e.type for e in traceback.chain] == ["RuntimeError"]
    assert [f.line for f in traceback.frames] == [120, 1130, 9, 140, 124]


def test_worker_reraise_is_one_chain_with_the_original_traceback() -> None:
    [traceback] = parse_tracebacks((DATA / "formats" / "worker_collate_shapes.log").read_text())
    assert traceback.exception.message == "Caught RuntimeError in DataLoader worker process 1."
    assert traceback.chain[0].message.startswith("stack expects each tensor to be equal size")


def test_interleaved_ranks_are_separate_tracebacks() -> None:
    tracebacks = parse_tracebacks((DATA / "formats" / "ranks_peer_crash.log").read_text())
    assert sorted(t.rank for t in tracebacks) == [0, 1]
    by_rank = {t.rank: t for t in tracebacks}
    assert "corrupt header" in by_rank[1].exception.message
    assert "Connection closed by peer" in by_rank[0].exception.message


def test_user_paths() -> None:
    assert is_user_path("train.py") and is_user_path("/home/a/proj/model.py") and is_user_path("Cell In[3]")
    assert is_user_path(r"C:\Users\a\proj\train.py")
    for path in ("/usr/lib/python3.11/site-packages/torch/nn/functional.py", "/usr/lib/python3.11/runpy.py",
                 r"C:\Python311\Lib\site-packages\x.py", r"C:\Users\a\AppData\Local\Programs\Python\Python311\Lib\runpy.py",
                 "<frozen runpy>", "/opt/venv/bin/torchrun", "/src/pytorch/torch/autograd/graph.py"):
        assert not is_user_path(path), path


def test_record_names_the_failure_the_time_and_the_code_version(tmp_path: Path, monkeypatch) -> None:
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / "train.py").write_text("x = 1\n")
    subprocess.run(["git", "add", "train.py"], cwd=project, check=True)
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "init"], cwd=project, check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True).stdout.strip()
    log = ("epoch 7 step 5120\n" 'Traceback (most recent call last):\n  File "' + str(project / "train.py")
           + '", line 1, in <module>\n    x = 1\n'
           "RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x32 and 64x10)\n")
    diagnosis = diagnose_text(log, correlate=False)
    monkeypatch.chdir(project)  # the commit is the current project's, never a folder's named in the log
    path = write_record(diagnosis, tmp_path / "records", source_text=log)
    text = path.read_text()
    assert path.name.endswith("-shape-mismatch.md")
    assert text.startswith("# Shape mismatch in a matrix multiply: (8x32) @ (64x10)")
    assert "- **When in training:** epoch 7, step 5120" in text
    assert f"- **git_commit:** {commit}" in text
    assert "nn.Linear(32, 10)" in text and "RuntimeError: mat1 and mat2" in text
    second = write_record(diagnosis, tmp_path / "records")
    assert second != path and second.exists()


def test_record_names_the_failing_runs_environment_from_the_log() -> None:
    from traindoctor.diagnose import diagnose_text
    from traindoctor.diagnose.record import render_record

    from diagnose_helpers import DATA

    diagnosis = diagnose_text((DATA / "dev" / "tb007.txt").read_text(), correlate=False)
    env = diagnosis.details["run_env"]
    assert env["python"] == "3.10" and env["os"] == "Linux" and env["gpu_memory"] == "23.51 GiB"
    record = render_record(diagnosis, env={"python": "3.11.9", "torch": "2.13.0"})
    failing = record.split("## Environment of the failing run")[1].split("## This machine")[0]
    assert "Read from the log:" in failing and "**python:** 3.10" in failing
    assert "## This machine (where the record was written)" in record


def test_record_says_when_only_this_machine_is_known() -> None:
    from traindoctor.diagnose import diagnose_text
    from traindoctor.diagnose.record import render_record

    diagnosis = diagnose_text("RuntimeError: CUDA error: device-side assert triggered\n", correlate=False)
    assert "run_env" not in diagnosis.details
    record = render_record(diagnosis, env={"python": "3.11.9"})
    assert "Only the environment of the machine that wrote this record is known" in record


def test_record_prefers_the_live_process_environment() -> None:
    from traindoctor.diagnose import diagnose_text
    from traindoctor.diagnose.record import render_record

    diagnosis = diagnose_text("RuntimeError: CUDA error: device-side assert triggered\n", correlate=False)
    diagnosis.details["live_env"] = {"torch": "2.5.1+cu124", "gpu": "NVIDIA H100 80GB HBM3"}
    record = render_record(diagnosis, env={"python": "3.11.9"})
    assert "Read from the live process:" in record and "**gpu:** NVIDIA H100 80GB HBM3" in record
