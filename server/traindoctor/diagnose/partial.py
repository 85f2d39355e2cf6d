"""Hypotheses from partial evidence: a paste whose decisive message is missing.

People paste the frames and leave the message in the issue's title, cut a paste mid-line, or
post a training log with no traceback at all. When no signature explains such a log, the
evidence that is there still points somewhere: the innermost frames (the backward pass, a
collate function, DDP's reducer, torch.compile), log lines (a loss scale falling below 1,
`grad_norm: nan`, NCCL watchdog C++ frames) or an exception message cut mid-way that is the
start of a known one. The clues are data (rules/evidence/clues.yaml, see its README); this
module matches them and ranks the kinds by the noisy-OR of their clues' weights.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..catalog import rules_dir
from .normalize import Line
from .parse import Chain
from .signatures import exception_signatures

_CUT_WEIGHT = 0.7  # a cut message that is the start of a known one
_CUT_MIN_CHARS = 20


@dataclass(frozen=True)
class Clue:
    id: str
    kind: str
    where: str  # frame | line
    pattern: re.Pattern[str]
    weight: float
    cause: str
    supports: str
    check: str
    fixes: tuple[tuple[str, str], ...] = ()
    min_count: int = 1
    below: tuple[str, float] | None = None
    above: tuple[str, float] | None = None
    ratio_above: tuple[str, str, float] | None = None
    requires: tuple[str, ...] = ()


@dataclass
class PartialHypothesis:
    """One kind the evidence points to, with what supports it and how to decide it."""

    kind: str
    score: float
    cause: str
    check: str
    supports: list[str] = field(default_factory=list)
    fixes: list[tuple[str, str]] = field(default_factory=list)
    clues: list[str] = field(default_factory=list)


@functools.cache
def _catalog() -> tuple[dict[str, Any], tuple[Clue, ...]]:
    data = yaml.safe_load((rules_dir() / "evidence" / "clues.yaml").read_text(encoding="utf-8"))
    clues = []
    for raw in data["clues"]:
        below = raw.get("below")
        above = raw.get("above")
        ratio = raw.get("ratio_above")
        clues.append(Clue(
            id=raw["id"], kind=raw["kind"], where=raw["where"], pattern=re.compile(raw["pattern"]),
            weight=float(raw["weight"]), cause=raw["cause"], supports=raw["supports"], check=raw["check"],
            fixes=tuple((f["title"], f["detail"]) for f in raw.get("fixes", ())),
            min_count=int(raw.get("min_count", 1)),
            below=(below["group"], float(below["value"])) if below else None,
            above=(above["group"], float(above["value"])) if above else None,
            ratio_above=(ratio["num"], ratio["den"], float(ratio["value"])) if ratio else None,
            requires=tuple(raw.get("requires", ())),
        ))
    return data.get("settings", {}), tuple(clues)


def threshold() -> float:
    return float(_catalog()[0].get("threshold", 0.3))


def infer(lines: list[Line], chains: list[Chain]) -> list[PartialHypothesis]:
    """Kinds the evidence supports, best first (empty when nothing does)."""
    settings, clues = _catalog()
    innermost = int(settings.get("innermost", 4))
    frame_texts = [f"{f.path} {f.function} {f.code or ''}" for chain in chains for f in chain.frames[-innermost:]]
    matched: dict[str, tuple[Clue, str]] = {}
    for clue in clues:
        found = _match(clue, frame_texts, lines)
        if found is not None:
            matched[clue.id] = (clue, found)
    for clue_id, (clue, _) in list(matched.items()):
        if any(required not in matched for required in clue.requires):
            del matched[clue_id]
    by_kind: dict[str, PartialHypothesis] = {}
    for clue, found in sorted(matched.values(), key=lambda m: -m[0].weight):
        _add(by_kind, clue.kind, clue.weight, clue.cause, clue.check,
             clue.supports.replace("{match}", _short(found)), clue.fixes, clue.id)
    cut = _cut_message(chains)
    if cut is not None:
        kind, title, message = cut
        _add(by_kind, kind, _CUT_WEIGHT, f"The message was cut, but it is the start of this one: {title}.",
             "Find the full message (the end of the log, or the issue's title) to confirm.",
             f'the exception message stops at "{_short(message)}", the beginning of a known message', (), "cut-message")
    return sorted(by_kind.values(), key=lambda h: -h.score)


def _add(by_kind: dict[str, PartialHypothesis], kind: str, weight: float, cause: str, check: str,
         supports: str, fixes: tuple[tuple[str, str], ...], clue_id: str) -> None:
    hypothesis = by_kind.get(kind)
    if hypothesis is None:  # the strongest clue of a kind states its cause and its check
        hypothesis = by_kind[kind] = PartialHypothesis(kind, 0.0, cause, check)
    hypothesis.score = 1 - (1 - hypothesis.score) * (1 - weight)
    if supports not in hypothesis.supports:
        hypothesis.supports.append(supports)
    hypothesis.fixes.extend(f for f in fixes if f not in hypothesis.fixes)
    hypothesis.clues.append(clue_id)


def _match(clue: Clue, frame_texts: list[str], lines: list[Line]) -> str | None:
    if clue.where == "frame":
        for text in reversed(frame_texts):
            found = clue.pattern.search(text)
            if found is not None:
                return found.group(0)
        return None
    count, first = 0, None
    for line in lines:
        found = clue.pattern.search(line.text)
        if found is None or not _holds(clue, found):
            continue
        count += 1
        first = first or line.text.strip()
        if count >= clue.min_count:
            return first
    return None


def _holds(clue: Clue, found: re.Match[str]) -> bool:
    try:
        if clue.below is not None:
            group, value = clue.below
            return float(found.group(group)) < value
        if clue.above is not None:
            group, value = clue.above
            return float(found.group(group)) > value
        if clue.ratio_above is not None:
            num, den, value = clue.ratio_above
            return float(found.group(num)) / max(1.0, float(found.group(den))) > value
    except (TypeError, ValueError, IndexError):
        return False
    return True


def _cut_message(chains: list[Chain]) -> tuple[str, str, str] | None:
    """The last exception of the paste, when its message is cut inside a known message."""
    for chain in reversed(chains):
        exception = chain.final.exception if chain.final is not None else None
        if exception is None:
            continue
        message = exception.message.strip()
        if len(message) < _CUT_MIN_CHARS or "\n" in message:
            return None
        for literal, signature in _literal_starts():
            if len(literal) > len(message) and literal.startswith(message):
                return signature.kind, signature.title_for({}), message
        return None
    return None


@functools.cache
def _literal_starts() -> tuple[tuple[str, Any], ...]:
    """The literal text each exception signature's patterns start with (long enough to be
    specific), most specific signature first."""
    out = []
    for signature in sorted(exception_signatures(), key=lambda s: -s.priority):
        if signature.kind == "other" or signature.context:
            continue
        for pattern in signature.patterns:
            literal = _literal_prefix(pattern.pattern)
            if len(literal) >= _CUT_MIN_CHARS + 5:
                out.append((literal, signature))
    return tuple(out)


_GROUP_OPEN = re.compile(r"^(?:\(\?[:i]\)|\(\?P<\w+>|\(\?:|\^)+")
_ESCAPED_LITERAL = set(".()[]{}*+?|^$\\/'\"-_:,=<> ")


def _literal_prefix(pattern: str) -> str:
    pattern = _GROUP_OPEN.sub("", pattern)
    out = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            nxt = pattern[index + 1]
            if nxt in _ESCAPED_LITERAL:
                out.append(nxt)
                index += 2
                continue
            break
        if char in ".()[]{}*+?|^$":
            break
        out.append(char)
        index += 1
    return "".join(out)


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
