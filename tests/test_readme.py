"""The README stays true: its runnable commands run with the exit code it states, every
option it (and the manual) documents exists, and it stays short enough to read.

A fenced block preceded by `<!-- runnable: exit N -->` is runnable: each of its lines is a
shell command, run from the repository root, that must exit with N. `.venv/bin/` in a command
means the environment running these tests (the one `make test` creates)."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from traindoctor.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
DOCUMENTS = {"README.md": README, "docs/usage.md": (REPO / "docs" / "usage.md").read_text(encoding="utf-8")}
RUNNABLE = re.compile(r"<!-- runnable: exit (\d) -->\n```[a-z]*\n(.*?)\n```", re.DOTALL)


def runnable_commands() -> list[tuple[str, int]]:
    return [(line, int(code)) for code, block in RUNNABLE.findall(README)
            for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_the_readme_is_short_and_marks_commands_to_run():
    assert len(README.splitlines()) <= 350
    assert len(runnable_commands()) >= 2


@pytest.mark.parametrize("command, expected", runnable_commands())
def test_a_runnable_readme_command_exits_as_documented(command: str, expected: int):
    bindir = str(Path(sys.executable).parent)
    done = subprocess.run(command.replace(".venv/bin/", bindir + "/"), shell=True, cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PATH": bindir + os.pathsep + os.environ["PATH"]})
    assert done.returncode == expected, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def _options() -> dict[str, set[str]]:
    """Each sub-command's option strings, and the top level's under ""."""
    parser = build_parser()
    found = {"": {o for a in parser._actions for o in a.option_strings}}
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in commands.choices.items():
        found[name] = {o for a in sub._actions for o in a.option_strings}
    return found


def _code_segments(text: str) -> list[str]:
    """Every line of a fenced block and every inline `code` span, comments cut off."""
    segments = []
    for block in re.findall(r"```[a-z]*\n(.*?)\n```", text, re.DOTALL):
        block = re.sub(r"\n[ \t]+(?=\[?-)", " ", block)  # a usage line continued on the next, indented
        segments += [line.split(" # ")[0] for line in block.splitlines()]
    prose = re.sub(r"```[a-z]*\n.*?\n```", "", text, flags=re.DOTALL)
    segments += re.findall(r"`([^`\n]+)`", prose)
    return segments


def documented_flags() -> list[tuple[str, str, str]]:
    """(document, sub-command, option) for every `traindoctor SUB ... --option` written down."""
    commands = set(_options()) - {""}
    found = set()
    for name, text in DOCUMENTS.items():
        for segment in _code_segments(text):
            for match in re.finditer(r"traindoctor\s+([a-z]+)((?:\s+[^\s;&]+)*)", segment):
                sub, rest = match.group(1), match.group(2)
                if sub not in commands:
                    continue
                rest = rest.split(" -- ")[0].split(" | ")[0]  # what follows `--` or a pipe is another command
                for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[A-Za-z])\b", rest):
                    found.add((name, sub, flag))
    return sorted(found)


def test_the_documents_name_many_options():
    flags = {(sub, flag) for _doc, sub, flag in documented_flags()}
    assert {("check", "--fix"), ("check", "--exit-zero"), ("watch", "--stop-on"), ("curves", "--plot"),
            ("diagnose", "--no-correlate"), ("run", "--anomaly")} <= flags


@pytest.mark.parametrize("document, command, flag", documented_flags())
def test_every_documented_option_exists(document: str, command: str, flag: str):
    assert flag in _options()[command], f"{document} documents `traindoctor {command} {flag}`, which does not exist"


def test_every_documented_sub_command_and_make_target_exists():
    commands = set(_options()) - {""}
    makefile = (REPO / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z]+):", makefile, re.MULTILINE))
    for segment in _code_segments(README):
        for sub in re.findall(r"^\s*(?:\.venv/bin/)?traindoctor\s+([a-z]+)", segment):
            assert sub in commands, segment
        for target in re.findall(r"\bmake\s+([a-z]+)", segment):
            assert target in targets, segment


def test_one_install_story_everywhere():
    """traindoctor is not on PyPI: nothing may tell a user to `pip install traindoctor`."""
    places = [REPO / "README.md", REPO / "docs" / "usage.md", REPO / "docs" / "github-actions.md",
              *sorted((REPO / "extension" / "src").glob("*.ts"))]
    for place in places:
        text = place.read_text(encoding="utf-8")
        assert not re.search(r"pip install (-e )?['\"]?traindoctor\b", text), place
    assert "-m pip install /path/to/traindoctor" in (REPO / "extension" / "src" / "server.ts").read_text()
    assert "pip install /path/to/traindoctor" in README


def test_the_demo_inputs_carry_no_personal_paths():
    for path in (REPO / "examples").rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            assert not re.search(r"/home/|/Users/|C:\\\\Users\\\\", text), path
