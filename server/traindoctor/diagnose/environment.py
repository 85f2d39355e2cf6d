"""The environment of the failing run, as far as the log shows it: Python (from the frames'
paths), torch and CUDA versions, GPU names, the OS. Used by the debug record so it does not
pass this machine's versions off as the run's."""

from __future__ import annotations

import bisect
import itertools
import re
from typing import Any

from ..model import Frame

_PYTHON = re.compile(r"[/\\]lib[/\\]python(\d\.\d+)[/\\]|[/\\]Python(\d)(\d+)[/\\]", re.I)
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("torch", re.compile(r"(?:PyTorch version|torch version|torch==|torch\.__version__\s*[:=]?|\btorch\s+)\s*:?\s*"
                         r"(\d+\.\d+(?:\.\d+)?(?:[+.]\w+)?)", re.I)),
    ("cuda", re.compile(r"(?:CUDA Version|CUDA used to build PyTorch|cuda version|torch\.version\.cuda)\s*[:=]?\s*"
                        r"(\d+\.\d+)", re.I)),
    ("driver", re.compile(r"Driver Version\s*:?\s*(\d+\.\d+(?:\.\d+)?)", re.I)),
    ("gpu", re.compile(r"\b((?:NVIDIA |Tesla |Quadro )?(?:GeForce )?(?:RTX |GTX )?"
                       r"(?:A100|H100|H200|A10G?|A40|A6000|L4|L40S?|V100|T4|P100|K80|P40|\d{4}(?: Ti)?)[\w -]*?)"
                       r"(?= with CUDA capability| which is too old|\s{2,}|\s+(?:On|Off)\b)")),
    ("gpu_memory", re.compile(r"GPU \d+ has a total capacit(?:y|ies) of ([\d.]+ ?[GM]iB)|\(GPU \d+; ([\d.]+ ?[GM]iB) total capacity")),
)

# Every line an entry can come from names one of these; the patterns run on those lines
# only (the GPU pattern, run over megabytes of training output, cost seconds).
_HINT_WORDS = ("torch", "cuda", "driver", "nvidia", "tesla", "quadro", "geforce", "gpu", "capabilit")
_HINT = re.compile("|".join(_HINT_WORDS), re.I)
HEAD = 2_000_000  # entries are printed at start-up: only the log's head is read


def _hints(text: str) -> list[tuple[int, int]]:
    """(start, end) of each hint word, in order. Lower-cased ASCII is searched with str.find:
    a case-insensitive regex over 2 MB of training output costs a few hundred ms."""
    if not text.isascii():
        return [found.span() for found in _HINT.finditer(text)]
    lowered = text.lower()
    found: list[tuple[int, int]] = []
    for word in _HINT_WORDS:
        at = lowered.find(word)
        while at >= 0:
            found.append((at, at + len(word)))
            at = lowered.find(word, at + len(word))
    found.sort()
    return found


def _hinted_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line that names a hint."""
    spans: list[tuple[int, int]] = []
    line_end = -1
    for start, end in _hints(text):
        if start <= line_end:
            continue  # another hint on a line already kept
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", end)
        if line_end < 0:
            line_end = len(text)
        spans.append((line_start, line_end))
    return spans


def mention_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of the lines environment_from_log can read an entry from."""
    head = text[:HEAD]
    spans = _hinted_spans(head)
    joined = "\n".join(head[s:e] for s, e in spans)
    starts = list(itertools.accumulate((e - s + 1 for s, e in spans[:-1]), initial=0))
    found = {bisect.bisect_right(starts, m.start()) - 1 for _, p in _PATTERNS for m in p.finditer(joined)}
    return [spans[i] for i in sorted(found)]


def environment_from_log(text: str, frames: tuple[Frame, ...] = ()) -> dict[str, Any]:
    """Entries found in the log; empty when it names nothing."""
    env: dict[str, Any] = {}
    for frame in frames:
        found = _PYTHON.search(frame.path)
        if found:
            env["python"] = found.group(1) or f"{found.group(2)}.{found.group(3)}"
            break
    if frames:
        paths = [f.path for f in frames]
        if any(re.match(r"^[A-Za-z]:\\", p) for p in paths):
            env["os"] = "Windows"
        elif any(p.startswith("/") for p in paths):
            env["os"] = "macOS" if any(p.startswith(("/Users/", "/opt/homebrew/")) for p in paths) else "Linux"
    head = text[:HEAD]
    head = "\n".join(head[s:e] for s, e in _hinted_spans(head))
    for name, pattern in _PATTERNS:
        found = pattern.search(head)
        if found:
            value = next(g for g in found.groups() if g)
            env[name] = value.strip()
    return env
