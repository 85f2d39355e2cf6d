"""A long log -> the regions worth normalising: the lines around every place a failure can be.

A training log is mostly progress lines, and normalising and parsing cost several µs
a line in Python: a million-line log would take seconds. Every later stage starts from
fixed text, so the whole log is searched only for that text, with `str.find` (C), and
the per-line work runs on the lines around each hit and on the log's tail.

The fixed text is read from the stages themselves, not listed here:
- parse: the traceback header, the frame mark, the suffixes of a bare `Type: message`;
- normalize: rich's box characters (VS Code's layout starts with an `Exception`);
- select: torchrun's failure table;
- rules/signatures: a literal that every match of each log-scope pattern and of each
  `extract_log` pattern contains (a pattern without one is itself searched: slower);
- environment: the lines of the log's head that name the run's versions and GPUs.

Around a hit, `BEFORE` lines (engine reads the last progress up to 2,000 lines before a
traceback) and `AFTER` lines (a message runs up to 200 lines, a handled traceback is
followed by progress within 500) are kept; windows that meet are merged, so every line
is read at most once and the work stays linear in the log's size.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

try:  # the regex parser: public as sre_parse before 3.11, deprecated there since
    from re import _parser as _sre_parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_parse as _sre_parser  # type: ignore[no-redef]

BEFORE = 2000
AFTER = 1000
TAIL = 2000  # with no traceback, the last progress before the end is still reported


class Region(NamedTuple):
    start: int  # character offsets into the text
    end: int  # exclusive; a region ends at a line end (before its newline) or the text's end
    first_line: int  # 0-based number of the region's first line in the text


@functools.cache
def _marks() -> tuple[tuple[str, ...], tuple[re.Pattern[str], ...]]:
    """(literals, patterns without a literal): what `regions` searches for."""
    from .markers import BARE_TYPE_SUFFIXES, BOX_START, ELASTIC_MARKS, FRAME_MARK, HEADER
    from .signatures import load_signatures

    literals: list[str] = [HEADER, FRAME_MARK, *BARE_TYPE_SUFFIXES, *ELASTIC_MARKS, *BOX_START]
    patterns: list[re.Pattern[str]] = []
    for signature in load_signatures():
        reads_log = (signature.patterns if signature.scope == "log" else ()) + signature.extract_log
        for pattern in reads_log:
            found = required_literals(pattern)
            if found:
                literals.extend(found)
            else:
                patterns.append(pattern)
    # A literal that contains another is found through the shorter one.
    kept: list[str] = []
    for literal in sorted(set(literals), key=len):
        if not any(shorter in literal for shorter in kept):
            kept.append(literal)
    return tuple(kept), tuple(patterns)


def required_literals(pattern: re.Pattern[str]) -> list[str] | None:
    """Literals one of which every match of `pattern` contains, or None when none is known
    (case-insensitive parts, no literal of 3 characters or more)."""
    if pattern.flags & re.IGNORECASE:
        return None
    try:
        parsed = _sre_parser.parse(pattern.pattern, pattern.flags)
    except Exception:  # noqa: BLE001 - an unparsable pattern is simply searched itself
        return None
    return _sequence(list(parsed))


def _sequence(items: list) -> list[str] | None:
    c = _sre_parser
    options: list[list[str]] = []
    run: list[str] = []
    for op, value in [*items, (None, None)]:
        if op is c.LITERAL and chr(value) != "\n":  # not across lines: raw lines carry prefixes
            run.append(chr(value))
            continue
        if run:
            options.append(["".join(run)])
            run = []
        inner: list[str] | None = None
        if op is c.SUBPATTERN:
            add_flags = value[1]
            inner = None if add_flags & re.IGNORECASE else _sequence(list(value[-1]))
        elif op is c.BRANCH:
            branches = [_sequence(list(branch)) for branch in value[1]]
            if all(branches):
                inner = [literal for branch in branches for literal in branch]
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and value[0] >= 1:
            inner = _sequence(list(value[2]))
        if inner:
            options.append(inner)
    options = [o for o in options if min(map(len, o)) >= 3]
    # the most selective choice: the one whose shortest literal is longest
    return max(options, key=lambda o: (min(map(len, o)), -len(o))) if options else None


# str.find of a single character is memchr (~10 GB/s); of a longer literal it is several
# times slower, and a log is searched for some 40 literals. So literals are grouped by
# their rarest character (as often in a sample of the log), and a group is found by
# checking each occurrence of that character, when that costs less than one pass per
# literal of the group (a check costs ~1,000 times a character of a pass).
_SAMPLE = 1 << 17  # characters read from the head, the middle and the tail
_CHECK_COST = 1000  # one check of an occurrence, in characters of a str.find pass


def _sample(text: str) -> str:
    if len(text) <= 3 * _SAMPLE:
        return text
    middle = len(text) // 2
    return text[:_SAMPLE] + text[middle:middle + _SAMPLE] + text[-_SAMPLE:]


def _hits(text: str) -> list[int]:
    """Offsets of the marks in `text` (a literal found once a line is enough)."""
    literals, patterns = _marks()
    sample = _sample(text)
    frequency: dict[str, float] = {}
    for char in set("".join(literals)):
        frequency[char] = sample.count(char) / max(1, len(sample))
    by_char: dict[str, list[tuple[str, int]]] = {}
    for literal in literals:
        rarest = min(range(len(literal)), key=lambda i: frequency[literal[i]])
        by_char.setdefault(literal[rarest], []).append((literal, rarest))
    hits: list[int] = []
    for char, group in list(by_char.items()):
        if frequency[char] * _CHECK_COST < len(group):
            continue
        del by_char[char]
        for literal, _ in group:
            at = text.find(literal)
            while at >= 0:
                hits.append(at)
                at = text.find(literal, text.find("\n", at) + 1 or len(text))
    for char, group in by_char.items():
        at = text.find(char)
        while at >= 0:
            for literal, offset in group:
                if at >= offset and text.startswith(literal, at - offset):
                    hits.append(at - offset)
                    break
            at = text.find(char, at + 1)
    for pattern in patterns:
        hits.extend(found.start() for found in pattern.finditer(text))
    return hits


def _windows(text: str, offsets: list[int], before: int, after: int,
             windows: list[list[int]]) -> tuple[int, int]:
    """Append [first line, last line, first anchor offset, its line, last anchor offset, its line]
    for sorted `offsets`, merging as they come; returns (offset, line) of the last one counted."""
    line, position = 0, 0
    for at in offsets:
        line += text.count("\n", position, at)  # line numbers by counting newlines: linear, in C
        position = at
        last = windows[-1] if windows else None
        if last is not None and line - before <= last[1] + 1:
            last[1], last[4], last[5] = max(last[1], line + after), at, line
        else:
            windows.append([line - before, line + after, at, line, at, line])
    return position, line


def regions(text: str) -> list[Region]:
    """The regions of `text` to normalise, in order, disjoint and not touching:
    one region covering the whole text when the windows meet everywhere."""
    from .environment import HEAD, mention_spans

    windows: list[list[int]] = []
    position, line = _windows(text, sorted(set(_hits(text))), BEFORE, AFTER, windows)
    end = max(0, len(text) - 1)
    tail_line = line + text.count("\n", position, end)
    windows.append([tail_line - TAIL, tail_line, end, tail_line, end, tail_line])
    mentions: list[list[int]] = []  # in the head only: counting its lines is cheap
    head_covered = windows[0][0] <= 0 and windows[0][4] >= HEAD  # a log dense with failures
    if not head_covered:
        _windows(text, [start for start, _ in mention_spans(text)], 0, 0, mentions)
    merged: list[list[int]] = []
    for window in sorted(windows + mentions, key=lambda w: w[0]):
        if merged and window[0] <= merged[-1][1] + 1:
            last = merged[-1]
            if window[1] > last[1]:
                last[1], last[4], last[5] = window[1], window[4], window[5]
        else:
            merged.append(window)
    out: list[Region] = []
    for first, last, first_at, first_anchor, last_at, last_anchor in merged:
        start = text.rfind("\n", 0, first_at) + 1
        line = first_anchor
        while line > max(first, 0) and start > 0:
            start = text.rfind("\n", 0, start - 1) + 1
            line -= 1
        stop = text.find("\n", last_at)
        for _ in range(last - last_anchor):
            if stop < 0:
                break
            stop = text.find("\n", stop + 1)
        out.append(Region(start, len(text) if stop < 0 else stop, line))
    return out
