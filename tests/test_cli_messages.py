"""Every sub-command names itself in its one-line errors, and reports usage errors
with exit 2 (README, "Exit codes"). Cheap: nothing here starts a training run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cli_helpers import traindoctor as run_cli

REPO = Path(__file__).resolve().parents[1]


def traindoctor(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd, timeout=60)


@pytest.mark.parametrize("command", ["run", "watch", "overfit", "repro"])
def test_a_command_without_a_training_command_names_itself(command: str):
    done = traindoctor(command)
    assert done.returncode == 2
    assert done.stderr == f"traindoctor {command}: needs a command after `--`, e.g. `-- python train.py`\n"


@pytest.mark.parametrize("args, message", [
    (("check", "no/such/path"), "traindoctor check: no such file or folder: no/such/path"),
    (("diagnose", "no/such.log"), "traindoctor diagnose: cannot read no/such.log: No such file or directory"),
    (("curves", "no/such.log"), "traindoctor curves: no/such.log: no such file"),
    (("rules", "TRN999"), "traindoctor rules: unknown rule 'TRN999' (see `traindoctor rules`)"),
    (("serve", "--tcp", "8.8.8.8:2087"),
     "traindoctor serve: --tcp: '8.8.8.8' is not a loopback address; the server only listens on loopback"),
    (("attach", "localhost:notaport"), "traindoctor attach: invalid address 'localhost:notaport': expected HOST:PORT"),
    (("repro", "--steps", "0", "--", "python", "x.py"), "traindoctor repro: --steps must be at least 1"),
])
def test_every_error_names_its_sub_command(args: tuple[str, ...], message: str):
    done = traindoctor(*args)
    assert done.returncode == 2
    assert done.stderr.strip() == message


def test_diagnose_and_curves_both_name_binary_input(tmp_path: Path):
    blob = tmp_path / "model.pt"
    blob.write_bytes(b"PK\x03\x04\x00\x00\x08\x00" * 64)
    diagnose, curves = traindoctor("diagnose", str(blob)), traindoctor("curves", str(blob))
    assert (diagnose.returncode, curves.returncode) == (2, 2)
    assert diagnose.stderr == f"traindoctor diagnose: {blob}: a binary file, not a training log\n"
    assert curves.stderr == f"traindoctor curves: {blob}: a binary file, not a training log\n"
