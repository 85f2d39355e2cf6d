"""Long logs: only the regions around failure anchors are normalised, the work stays linear,
and the diagnosis is the one of the whole text (no timing asserted: work is counted)."""

from __future__ import annotations

import re

import pytest

from traindoctor.diagnose import anchors, diagnose_text
from traindoctor.diagnose.normalize import _normalize_lines, normalize
from traindoctor.diagnose.parse import parse_chains

from diagnose_helpers import DATA

FIXTURES = sorted(p for folder in ("formats", "kinds", "dev") for p in (DATA / folder).iterdir()
                  if p.suffix in (".log", ".txt"))  # an elastic error file (.json) is JSON only whole
HANDLED = (DATA / "formats" / "multiple_tracebacks.log").read_text()
FATAL = (DATA / "formats" / "ranks_oom_fragmentation.log").read_text()


def noise(lines: int, start: int = 0) -> list[str]:
    """Training output with none of the anchors: logging records, tqdm redraws, colours, glog."""
    out = []
    for step in range(start, start + lines):
        kind = step % 4
        if kind == 0:
            out.append("\r".join(f"{p:3d}%|####| {p}/100 [00:01<00:02, 9.{p % 10}it/s]" for p in range(0, 100, 25)))
        elif kind == 1:
            out.append(f"2024-05-02 09:{step % 60:02d}:00,000 INFO train step={step} loss={1 / (step + 1):.4f}")
        elif kind == 2:
            out.append(f"\x1b[32m[metrics]\x1b[0m step {step}: acc=0.{step % 1000:03d}")
        else:
            out.append(f"W1202 10:00:{step % 60:02d}.000000 {1000 + step} torch/_dynamo/x.py:{step}] recompiling")
    return out


def long_log(lines: int) -> str:
    """A handled traceback early on, the fatal one at the end, noise in between."""
    body = noise(500) + HANDLED.splitlines()[:6] + noise(lines - 540, 500)
    return "\n".join(body + FATAL.splitlines()) + "\n"


def test_every_log_pattern_of_the_catalog_has_a_literal() -> None:
    # A pattern without one is searched as a regular expression over the whole log: slow.
    assert anchors._marks()[1] == ()


def test_required_literals() -> None:
    assert anchors.required_literals(re.compile(r"(?<![^\n])Killed[ \t]*$")) == ["Killed"]
    assert anchors.required_literals(re.compile(r"Assertion `(?P<a>[^`]+)` failed\.")) == ["Assertion `"]
    assert sorted(anchors.required_literals(re.compile(r"(?:oom-killer|Killed process) \d+"))) == [
        "Killed process", "oom-killer"]
    assert anchors.required_literals(re.compile(r"(?i)killed")) is None
    assert anchors.required_literals(re.compile(r"ab\nKilled")) == ["Killed"]  # raw lines carry prefixes
    assert anchors.required_literals(re.compile(r"\d+\s+\w+")) is None


def test_a_short_log_is_read_whole() -> None:
    text = (DATA / "formats" / "rich_box.log").read_text()
    assert [(r.start, r.first_line) for r in anchors.regions(text)] == [(0, 0)]
    assert normalize(text) == _normalize_lines(text)


def test_lines_normalised_do_not_grow_with_the_noise() -> None:
    small, large = long_log(10_000), long_log(100_000)
    bound = 2 * (anchors.BEFORE + anchors.AFTER) + anchors.TAIL + 200
    assert len(normalize(small)) <= bound
    assert len(normalize(large)) <= bound
    assert diagnose_text(small, correlate=False).kind == diagnose_text(large, correlate=False).kind == "cuda-oom"


def test_a_log_dense_with_failures_is_read_once() -> None:
    fragment = FATAL.splitlines()[-12:]

    def dense(repeats: int) -> str:
        return "\n".join(line for i in range(repeats) for line in noise(40, i * 40) + fragment) + "\n"

    small, large = dense(100), dense(1000)
    # every line is in a region, read once: the lines normalised grow exactly with the log
    assert len(normalize(large)) == 10 * len(normalize(small))
    assert len(normalize(large)) <= large.count("\n") * 2  # tqdm redraws split a line in several


@pytest.mark.parametrize("size", [30_000, 120_000])
def test_the_regions_parse_like_the_whole_log(size: int) -> None:
    text = long_log(size)
    windowed = parse_chains(normalize(text))
    whole = parse_chains(_normalize_lines(text))
    assert [(c.final.exception, c.frames, c.rank) for c in windowed] == \
        [(c.final.exception, c.frames, c.rank) for c in whole]


def test_a_log_without_traceback_still_reports_its_last_progress() -> None:
    text = "\n".join(noise(50_000)) + "\n"
    diagnosis = diagnose_text(text, correlate=False)
    assert diagnosis.kind == "other"
    assert diagnosis.details["progress"]["step"] == 49_998  # the tail is always read


@pytest.mark.parametrize("path", FIXTURES, ids=[f"{p.parent.name}/{p.name}" for p in FIXTURES])
def test_a_fixture_after_20000_lines_of_noise_gives_the_same_diagnosis(path) -> None:
    text = path.read_bytes().decode("utf-8", "replace")
    alone = diagnose_text(text, correlate=False)
    embedded = diagnose_text("\n".join(noise(20_000)) + "\n" + text, correlate=False)
    assert (embedded.kind, embedded.location, embedded.exception, embedded.title) == \
        (alone.kind, alone.location, alone.exception, alone.title)
