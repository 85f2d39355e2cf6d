"""Small multi-file projects written to a temporary folder and linted as a whole: through
`traindoctor check` run as a user runs it (a subprocess), or through `lint_source` in process with a
project index (as the language server lints an open file). Shared by the lint and lsp tests."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path

from traindoctor.config import Config
from traindoctor.lint import LintResult, lint_source
from traindoctor.lint.project import ProjectIndex, new_index

DEMO_PYPROJECT = "[project]\nname = 'demo'\n"


def write_project(root: Path, files: dict[str, str], *, dedent: bool = False,
                  pyproject: str | None = DEMO_PYPROJECT) -> Path:
    """Writes FILES (a path under ROOT -> its text), in their order, with the folders they need, after a
    pyproject.toml that makes ROOT the project (None: no pyproject.toml). Returns ROOT."""
    root.mkdir(parents=True, exist_ok=True)
    if pyproject is not None:
        (root / "pyproject.toml").write_text(pyproject)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text) if dedent else text)
    return root


def run_check(target: Path, select: str, *options: str) -> list[dict]:
    """`traindoctor check --format json --select SELECT *OPTIONS TARGET` in a subprocess, run in TARGET's
    folder (TARGET itself when it is one). Asserts that it ran (exit 0: no findings, 1: findings) and
    returns its findings as JSON objects, in check's order."""
    folder = target if target.is_dir() else target.parent
    done = subprocess.run([sys.executable, "-m", "traindoctor", "check", "--format", "json", "--select", select,
                           *options, str(target)], capture_output=True, text=True, cwd=folder, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def places(findings: list[dict], fields: tuple[str, ...] = ("code", "file", "line")) -> list[tuple]:
    """Each JSON finding as a tuple of FIELDS, in the findings' order; "file" is the file's name alone."""
    return [tuple(Path(f["path"]).name if field == "file" else f[field] for field in fields) for f in findings]


def places_found_by_check(target: Path, select: str, *options: str,
                          fields: tuple[str, ...] = ("code", "file", "line")) -> list[tuple]:
    """run_check's findings as places(FIELDS), sorted (check's order across files is not what is tested)."""
    return sorted(places(run_check(target, select, *options), fields))


def index_of(paths: Iterable[Path]) -> ProjectIndex:
    """A project index of the files at PATHS, read in that order."""
    index = new_index()
    for path in paths:
        index.update(str(path), path.read_text())
    return index


def lint_in_project(root: Path, name: str, select: str, index: ProjectIndex) -> LintResult:
    """`lint_source` over ROOT/NAME with SELECT's rules alone (nothing ignored) and the project INDEX."""
    path = root / name
    config = Config().with_overrides(select=(select,), ignore=())
    return lint_source(path.read_text(), str(path), config, project=index)


def lines_found_in_project(root: Path, files: dict[str, str], code: str, target: str = "train.py") -> list[int]:
    """Writes FILES (dedented) as a project under ROOT, indexes them and lints TARGET in process for CODE;
    asserts the lint did not fail and returns the 1-based lines of CODE's findings."""
    write_project(root, files, dedent=True)
    result = lint_in_project(root, target, code, index_of(root / name for name in files))
    assert result.error is None, result.error
    return [f.range.start.line + 1 for f in result.findings if f.code == code]


def functions_reporting(source: str, code: str, filename: str = "train.py") -> set[str]:
    """The names of the functions of `source` (linted in process with the strict set) holding a finding of `code`."""
    lines = source.splitlines()
    found = set()
    for finding in lint_source(source, filename, Config(select=("strict",))).findings:
        if finding.code == code:
            line = finding.to_json()["line"]
            found.add(next(l.split("def ")[1].split("(")[0] for l in reversed(lines[:line]) if "def " in l))
    return found
