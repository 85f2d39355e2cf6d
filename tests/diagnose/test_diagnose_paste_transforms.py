"""What a paste goes through must not change the diagnosis (issue 28): every wild dev paste the
engine diagnoses right keeps its kind and user frame when it is wrapped the ways people paste it
(a markdown fence, a markdown indented block, Windows line ends, tabs, blank lines between
lines, one timestamp or rank prefix per line). Dev half only: the test half stays unseen."""

from __future__ import annotations

import functools
import re

import pytest

from traindoctor.diagnose import diagnose_text

from diagnose_helpers import DATA, load_yaml

WILD = DATA / "wild"


def _lines(text: str, edit) -> str:
    return "\n".join(edit(line) for line in text.split("\n"))


TRANSFORMS = {
    "markdown fence": lambda t: "```\n" + t + "\n```",
    "markdown indented block": lambda t: _lines(t, lambda line: "    " + line if line else line),
    "windows line ends": lambda t: t.replace("\n", "\r\n"),
    "tabs": lambda t: _lines(t, lambda line: re.sub(r"^( {4})+", lambda m: "\t" * (len(m.group(0)) // 4), line)),
    "blank lines between": lambda t: t.replace("\n", "\n\n"),
    "timestamp per line": lambda t: _lines(t, lambda line: "2024-05-02 09:41:11,001 - ERROR - " + line),
    "rank per line": lambda t: _lines(t, lambda line: "[rank3]: " + line),
}
# Pastes whose own lines already carry stacked prefixes (a Ray worker, a log level, a launcher):
# a second prefix on top of those is not a paste anyone makes.
_PREFIXED = re.compile(r"^(?:\(\w+ (?:rank=\d+ )?pid=|SUBPROCESS: |\[rank\d+\]:|\d{4}-\d\d-\d\d )", re.M)


# Pastes whose diagnosis a per-line prefix is known to change (none: w842's fenced lines, empty once
# their prefix is stripped, are skipped as the bare ones are; normalize.py).
_PREFIX_CHANGES_KNOWN: set[str] = set()


def _answer(text: str) -> tuple[str, tuple[str, int] | None]:
    diagnosis = diagnose_text(text, correlate=False)
    location = diagnosis.location
    return diagnosis.kind, None if location is None else (location.path, location.line)


@functools.cache
def _right_dev_pastes() -> tuple[tuple[str, str, tuple], ...]:
    out = []
    for label in load_yaml(WILD / "labels.yaml"):
        if label["split"] != "dev" or label["class"] == "other":
            continue
        text = (WILD / label["file"]).read_text(encoding="utf-8")
        answer = _answer(text)
        if answer[0] == label["class"]:
            out.append((label["id"], text, answer))
    return tuple(out)


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_a_paste_transform_keeps_the_diagnosis(name: str) -> None:
    transform = TRANSFORMS[name]
    prefixing = name.endswith("per line")
    changed = []
    for case_id, text, (kind, location) in _right_dev_pastes():
        if prefixing and case_id in _PREFIX_CHANGES_KNOWN:
            continue
        if prefixing and _PREFIXED.search(text):
            continue
        got_kind, got_location = _answer(transform(text))
        if got_kind != kind or (location is not None and got_location != location):
            changed.append(f"{case_id}: {kind} {location} -> {got_kind} {got_location}")
    assert not changed, "\n".join(changed)
