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
    followed_by: re.Pattern[str] | None = None
    origin: re.Pattern[str] | None = None
    innermost: int | None = None  # a frame clue: only this many innermost frames (else settings' innermost)
    tail: int | None = None  # a line clue: only the log's last this many non-blank lines


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
            followed_by=re.compile(raw["followed_by"]) if raw.get("followed_by") else None,
            origin=re.compile(raw["origin"]) if raw.get("origin") else None,
            innermost=int(raw["innermost"]) if raw.get("innermost") else None,
            tail=int(raw["tail"]) if raw.get("tail") else None,
        ))
    return data.get("settings", {}), tuple(clues)


@functools.cache
def _per_kind() -> dict[str, Any]:
    return yaml.safe_load((rules_dir() / "evidence" / "checks.yaml").read_text(encoding="utf-8")) or {}


def kind_check(kind: str) -> str:
    """The one thing to look at or run that decides a hypothesis of `kind` (rules/evidence/checks.yaml)."""
    return str((_per_kind().get("checks") or {}).get(kind, ""))


def inferred_fixes(kind: str) -> list[tuple[str, str]] | None:
    """The fixes of an inferred `kind` when its first signature fixes only one of its causes
    (checks.yaml `fixes`); None for the other kinds."""
    fixes = (_per_kind().get("fixes") or {}).get(kind)
    return None if fixes is None else [(str(f["title"]), str(f["detail"])) for f in fixes]


def kind_title(kind: str) -> str:
    """What a hypothesis of `kind` is called when no message names its cause (checks.yaml `titles`)."""
    return str((_per_kind().get("titles") or {}).get(kind, kind))


def threshold() -> float:
    return float(_catalog()[0].get("threshold", 0.3))


def infer(lines: list[Line], chains: list[Chain]) -> list[PartialHypothesis]:
    """Kinds the evidence supports, best first (empty when nothing does)."""
    settings, clues = _catalog()
    innermost = int(settings.get("innermost", 4))
    frame_texts: list[tuple[int, str]] = []  # (depth: 0 for a traceback's innermost frame, text)
    for chain in chains:
        shown = chain.frames[-innermost:]
        for at, f in enumerate(shown):
            depth = len(shown) - 1 - at
            frame_texts.append((depth, f"{f.path} {f.function} {f.code or ''}"))
            bare = f.function.rsplit(".", 1)[-1]
            if bare != f.function:  # Python 3.11+ qualified names (IPython 8, rich): `BaseProcess.start`
                frame_texts.append((depth, f"{f.path} {bare} {f.code or ''}"))
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
    cut = _cut_message(chains) or _cut_title(lines, chains)
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


def _match(clue: Clue, frame_texts: list[tuple[int, str]], lines: list[Line]) -> str | None:
    if clue.where == "frame":
        for depth, text in reversed(frame_texts):
            if clue.innermost is not None and depth >= clue.innermost:
                continue
            found = clue.pattern.search(text)
            if found is not None:
                return found.group(0)
        return None
    count, first = 0, None
    start = 0
    if clue.tail is not None:  # where the log stops: the last `tail` non-blank lines
        said = [at for at, line in enumerate(lines) if line.text.strip()]
        start = said[-clue.tail] if len(said) >= clue.tail else 0
    for at, line in enumerate(lines):
        if at < start:
            continue
        if clue.origin is not None and (not line.origin or clue.origin.search(line.origin) is None):
            continue  # the record was not logged (at warning level or above) by the module the clue names
        found = clue.pattern.search(line.text)
        if found is None or not _holds(clue, found):
            continue
        if clue.followed_by is not None and not _next_matches(clue.followed_by, lines, at):
            continue
        count += 1
        first = first or line.text.strip()
        if count >= clue.min_count:
            return first
    return None


def _next_matches(pattern: re.Pattern[str], lines: list[Line], at: int) -> bool:
    """Whether the next non-blank line after `at` matches (a REPL's input line and the output it printed)."""
    following = next((line.text for line in lines[at + 1:] if line.text.strip()), None)
    return following is not None and pattern.search(following) is not None


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
    """The last exception of the paste, when its message stops inside the literal text of a
    known message (the paste was cut mid-line): its kind, that signature's title, the message."""
    for chain in reversed(chains):
        exception = chain.final.exception if chain.final is not None else None
        if exception is None:
            continue
        message = exception.message.strip()
        if len(message) < _CUT_MIN_CHARS or "\n" in message:
            return None
        known = _known_start(message)
        return None if known is None else (*known, message)
    return None


def _cut_title(lines: list[Line], chains: list[Chain]) -> tuple[str, str, str] | None:
    """A paste that is one line and no traceback, the start of a known message with the colon or
    ellipsis an issue's title ends it with (`Mat1 and Mat2 shapes cannot be multiplied:`)."""
    if any(chain.frames or chain.final is not None for chain in chains):
        return None
    said = [line.text.strip() for line in lines if line.text.strip()]
    if len(said) != 1:
        return None
    message = _TITLE_END.sub("", said[0])
    if len(message) < _CUT_MIN_CHARS:
        return None
    known = _known_start(message)
    return None if known is None else (*known, message)


_TITLE_END = re.compile(r"\s*(?::|\.{3}|…)\s*$")


def _known_start(message: str) -> tuple[str, str] | None:
    """The kind and title of the known message whose literal text `message` ends inside (from a word start)."""
    lowered = message.lower()
    starts = [0] + [i + 1 for i, ch in enumerate(lowered) if ch in _WORD_BREAK]
    for run, signature in _literal_runs():
        for at in starts:
            tail = lowered[at:]
            if len(tail.strip()) >= _CUT_MIN_TAIL and len(tail) < len(run) and run.startswith(tail):
                return signature.kind, signature.title_for({})
    return None


_CUT_MIN_TAIL = 15  # the cut part of a known message must be at least this long to name it
_WORD_BREAK = set(" :'\"([{=,")
_MIN_RUN = 25  # literal text shorter than this is too common to name a message


@functools.cache
def _literal_runs() -> tuple[tuple[str, Any], ...]:
    """The literal texts (lower-cased) inside each exception signature's patterns, long enough to
    be specific, most specific signature first."""
    out = []
    for signature in sorted(exception_signatures(), key=lambda s: -s.priority):
        if signature.kind == "other" or signature.context:
            continue
        for pattern in signature.patterns:
            out.extend((run.lower(), signature) for run in _runs_of(pattern.pattern) if len(run) >= _MIN_RUN)
    return tuple(out)


_MAX_EXPANSIONS = 16


def _runs_of(pattern: str) -> list[str]:
    """Every maximal run of literal text a regular expression requires, with its optional parts
    and literal alternatives expanded (`(?:CUDA error: )?no kernel image` gives both)."""
    try:
        from re import _parser as sre  # the stdlib's own regex parser (Python >= 3.11)

        tokens = sre.parse(pattern)
    except Exception:  # an unparsable or future pattern: no run rather than a wrong one
        return []

    def literal(sequence) -> list[str] | None:
        outs = [""]
        for op, av in sequence:
            if op is sre.LITERAL:
                parts = [chr(av)]
            elif op is sre.SUBPATTERN:
                parts = literal(av[-1])
            elif op is sre.BRANCH:
                alternatives = [literal(branch) for branch in av[1]]
                parts = None if any(a is None for a in alternatives) else [p for a in alternatives for p in a]
            elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and av[0] == 0 and av[1] == 1:
                inner = literal(av[2])
                parts = None if inner is None else ["", *inner]
            else:
                parts = None
            if parts is None:
                return None
            outs = [o + p for o in outs for p in parts]
            if len(outs) > _MAX_EXPANSIONS:
                return None
        return outs

    runs: list[str] = []
    current = [""]
    for token in tokens:
        parts = literal([token])
        if parts is None:
            runs.extend(current)
            current = [""]
        else:
            current = [c + p for c in current for p in parts][:_MAX_EXPANSIONS]
    runs.extend(current)
    return [run for run in dict.fromkeys(runs) if run]


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
