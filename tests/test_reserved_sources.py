"""Nothing in this repository comes from a source that /work/shared/HELD-OUT.md reserves for independent
measurement: no case, label, corpus paste, benchmark repository or lint test case names a reserved
thread, or a thread or repository of a reserved repository. (On 2026-12-06 this found 17 pastes of
tests/diagnose/data/fresh and one lint case taken from reserved sources; they were removed.)

Official documentation pages cited as a rule's reference (the mechanism's own docs) are not cases, and
are allowed, though the list names some of them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
HELD_OUT = Path("/work/shared/HELD-OUT.md")
SCANNED = ("tests", "bench", "rules", "examples")
TEXT_SUFFIXES = {".py", ".yaml", ".yml", ".txt", ".log", ".json", ".md", ".ipynb", ""}
DOCUMENTATION = re.compile(r"^https?://(docs\.)?pytorch\.org/docs/")
URL = re.compile(r"https?://[^\s'\"<>)\]`]+")
# Same repository under another name.
ALIASES = {"lightning-ai/lightning": ("lightning-ai/pytorch-lightning",)}

pytestmark = pytest.mark.skipif(not HELD_OUT.exists(), reason="the reserved list lives outside the repository")


def _reserved() -> tuple[set[str], set[str]]:
    text = HELD_OUT.read_text(encoding="utf-8")
    repos = {repo.lower() for repo in re.findall(r"^- ([\w.-]+/[\w.-]+)\s*$", text, re.M)}
    for repo, others in ALIASES.items():
        if repo in repos:
            repos.update(others)
    threads = {_key(url) for url in re.findall(r"^- (https?://\S+)", text, re.M)}
    return repos, threads


def _key(url: str) -> str:
    return url.lower().rstrip("/.,;:")


def _files():
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in TEXT_SUFFIXES and "__pycache__" not in path.parts:
                yield path


def test_no_reserved_thread_or_repository_url() -> None:
    repos, threads = _reserved()
    found = []
    for path in _files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for url in URL.findall(text):
            key = _key(url)
            github = re.match(r"https?://github\.com/([\w.-]+/[\w.-]+)", key)
            if DOCUMENTATION.match(key):
                continue
            if key in threads or (github and github.group(1).removesuffix(".git") in repos):
                found.append(f"{path.relative_to(ROOT)}: {url}")
    assert found == []


def test_no_reserved_repository_in_a_benchmark_or_label() -> None:
    """`repo:`/`name:` values of every YAML file (the ecosystem's repositories, the bug-fix labels,
    the re-created cases, the corpora's labels)."""
    repos, _ = _reserved()
    found = []
    for path in _files():
        if path.suffix not in (".yaml", ".yml"):
            continue
        for value in _scalars(yaml.safe_load(path.read_text(encoding="utf-8"))):
            if isinstance(value, str) and value.lower().strip() in repos:
                found.append(f"{path.relative_to(ROOT)}: {value}")
    assert found == []


def _scalars(data):
    if isinstance(data, dict):
        for value in data.values():
            yield from _scalars(value)
    elif isinstance(data, list):
        for item in data:
            yield from _scalars(item)
    else:
        yield data
