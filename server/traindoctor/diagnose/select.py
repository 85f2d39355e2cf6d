"""Pick the failure that explains the log, among every traceback and known log line.

Each traceback chain is classified by the highest-priority signature matching
any of its exceptions; log-scope signatures (NCCL watchdog, `Killed`, arch
warnings) add candidates of their own. The winner has the highest signature
priority, then an exception, then user frames, then the latest position.
Symptoms (a peer that closed the connection, the launcher's summary) rank low.
In multi-rank logs the root-cause rank is torchrun's "Root Cause (first
observed failure)" when present, else the rank with a non-symptom error; its
traceback supplies the exception and location.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, field
from typing import Any

from .markers import ELASTIC_FAILURES, ELASTIC_ROOT
from .normalize import Line
from .parse import HEADER, LOG_RECORD, Block, Chain
from .user_frame import deepest_user_frame
from .signatures import Signature, exception_signatures, fallback, log_signatures, match_exception

_MAX_EXCEPTION_TEXT = 20_000


@dataclass
class Candidate:
    signature: Signature
    facts: dict[str, Any]
    chain: Chain | None = None
    block: Block | None = None  # the block whose exception matched
    line: int | None = None  # for log hits: index of the matching line
    rank: int | None = None
    evidence: list[str] = field(default_factory=list)
    handled: bool = False  # training went on after this traceback: it did not end the run
    message: str = ""  # a hit without an exception line: its message as printed, continuation lines too

    @property
    def key(self) -> tuple:
        has_exception = self.block is not None and self.block.exception is not None
        has_user = self.chain is not None and any(f.is_user for f in self.chain.frames)
        position = self.chain.start if self.chain is not None else (self.line or 0)
        return (not self.handled, self.signature.priority, has_exception, has_user, position)


@dataclass
class ElasticFailure:
    rank: int | None = None
    exitcode: int | None = None
    signal: str | None = None
    traceback: str = ""


@dataclass
class ElasticSummary:
    root: ElasticFailure | None = None
    others: list[ElasticFailure] = field(default_factory=list)
    root_section: tuple[int, int] | None = None  # line indices of the root-cause entry


@dataclass
class Selection:
    candidate: Candidate
    root_rank: int | None
    rank_notes: dict[int, str]
    elastic: ElasticSummary | None
    candidates: list[Candidate] = field(default_factory=list)  # every explanation considered


def exception_text(block: Block) -> str:
    exc = block.exception
    if exc is None:
        return ""
    return f"{exc.type}: {exc.message[:_MAX_EXCEPTION_TEXT]}"


@functools.cache
def _exception_signatures() -> tuple[Signature, ...]:
    """Computed once: a log dense with tracebacks classifies tens of thousands of chains."""
    return exception_signatures()


def classify_chain(chain: Chain) -> Candidate:
    best: Candidate | None = None
    signatures = _exception_signatures()
    context = "\n".join(f"{f.path} {f.function} {f.code or ''}" for f in chain.frames)
    for block in chain.blocks:
        if block.exception is None:
            continue
        matched = match_exception(exception_text(block), signatures, context)
        if matched and (best is None or matched[0].priority > best.signature.priority):
            best = Candidate(matched[0], matched[1], chain, block, rank=chain.rank)
    if best is None:
        best = Candidate(fallback(), {}, chain, chain.final, rank=chain.rank)
    return best


def scan_log(lines: list[Line], joined: str, offsets: list[int]) -> list[Candidate]:
    """One candidate per log-scope signature and rank, with up to 4 matching lines as evidence.
    The first pattern of a signature that matches is the one that describes it best."""
    hits: list[Candidate] = []
    for signature in log_signatures():
        by_rank: dict[int | None, Candidate] = {}
        for pattern in signature.patterns:
            for found in pattern.finditer(joined):
                index = bisect.bisect_right(offsets, found.start()) - 1
                line = lines[index]
                hit = by_rank.get(line.rank)
                if hit is None:
                    facts = {k: v for k, v in found.groupdict().items() if v is not None}
                    by_rank[line.rank] = Candidate(signature, facts, line=index, rank=line.rank,
                                                   evidence=[line.text.strip()])
                elif len(hit.evidence) < 4 and line.text.strip() not in hit.evidence:
                    hit.evidence.append(line.text.strip())
            if by_rank:
                break
        hits.extend(by_rank.values())
    return hits


_ROOT = ELASTIC_ROOT
_FAILURES = ELASTIC_FAILURES
_FIELD = re.compile(r"^\s*(time|host|rank|exitcode|error_file|traceback)\s*:\s?(.*)$")


def elastic_summary(lines: list[Line]) -> ElasticSummary | None:
    """torchrun's failure table: which rank failed first, what happened to the others."""
    summary = ElasticSummary()
    section = ""
    current: ElasticFailure | None = None
    found_any = False
    for index, line in enumerate(lines):
        text = line.text
        if _ROOT in text:
            section, current, found_any = "root", None, True
            summary.root_section = (index, len(lines))
            continue
        if text.strip() == _FAILURES:
            section, current, found_any = "failures", None, True
            continue
        if not section:
            continue
        if text.startswith("====") or text.startswith("----"):
            if section == "root" and summary.root_section:
                summary.root_section = (summary.root_section[0], index)
            section = "" if text.startswith("====") else section
            current = None
            continue
        found = _FIELD.match(text)
        if not found:
            continue
        name, value = found.groups()
        if name == "time" or current is None:
            current = ElasticFailure()
            if section == "root" and summary.root is None:
                summary.root = current
            elif section != "root":
                summary.others.append(current)
        if name == "rank":
            number = re.match(r"(-?\d+)", value)
            current.rank = int(number.group(1)) if number else None
        elif name == "exitcode":
            number = re.match(r"(-?\d+)", value)
            current.exitcode = int(number.group(1)) if number else None
            sig = re.search(r"\((SIG\w+)\)", value)
            current.signal = sig.group(1) if sig else None
        elif name == "traceback":
            current.traceback = value.strip()
    return summary if found_any else None


def _exception_follows(hit: Candidate, chains: list[Chain]) -> bool:
    """A hit of an `exception_missing` signature (anomaly mode's warning) stands in for an
    exception the paste lost; a traceback of its rank with an exception line after it means
    nothing was lost, and that traceback is the failure."""
    if not hit.signature.exception_missing or hit.line is None:
        return False
    return any(c.start > hit.line and c.rank == hit.rank and c.final.exception is not None for c in chains)


def _describe(candidate: Candidate) -> str:
    block = candidate.block
    head = ""
    if block is not None and block.exception is not None:
        message = block.exception.message.strip().splitlines()
        head = f"{block.exception.type}: {message[0][:160] if message else ''}".rstrip(": ")
    elif candidate.evidence:
        head = candidate.evidence[0][:160]
    where = ""
    if candidate.chain is not None:
        user = deepest_user_frame(candidate.chain.frames)
        if user is not None:
            where = f" at {user.path}:{user.line}"
    note = " (a consequence of another rank's failure)" if candidate.signature.symptom else ""
    return f"{head}{where}{note}".strip()




def select(lines: list[Line], chains: list[Chain]) -> Selection:
    joined = "\n".join(line.text for line in lines)
    offsets: list[int] = []
    position = 0
    for line in lines:
        offsets.append(position)
        position += len(line.text) + 1
    elastic = elastic_summary(lines)
    chain_candidates = [classify_chain(chain) for chain in chains]
    _mark_handled(lines, chain_candidates)
    if elastic and elastic.root and elastic.root_section:
        start, end = elastic.root_section
        for candidate in chain_candidates:
            if candidate.rank is None and candidate.chain is not None and start <= candidate.chain.start < end:
                candidate.rank = elastic.root.rank
    log_hits = [hit for hit in scan_log(lines, joined, offsets) if not _exception_follows(hit, chains)]
    for hit in log_hits:
        # A log line inside a traceback (e.g. "killed by signal: Killed" in the
        # exception message) takes that traceback's frames for its location.
        owner = next((c for c in chains if hit.line is not None and c.start <= hit.line < c.end
                      and c.rank == hit.rank), None)  # interleaved ranks: its own rank's traceback
        if owner is not None:
            hit.chain, hit.block = owner, owner.final
    candidates = chain_candidates + log_hits
    winner = max(candidates, key=lambda c: c.key) if candidates else Candidate(fallback(), {})
    if winner.signature.kind == "other" and (winner.block is None or winner.block.exception is None
                                             or winner.block.exception.type.rsplit(".", 1)[-1] in _CHILD_FAILED):
        found = _message_only(lines, joined, offsets)
        if found is not None:
            found.chain = winner.chain  # the frames of a traceback cut before its exception, if any
            candidates.append(found)
            winner = found
    if not candidates:
        return Selection(winner, None, {}, elastic, [])

    ranks = {c.rank for c in candidates if c.rank is not None}
    root_rank: int | None = None
    primaries = [c for c in chain_candidates if c.rank is not None and not c.signature.symptom
                 and c.block is not None and c.block.exception is not None]
    if elastic and elastic.root and elastic.root.rank is not None:
        root_rank = elastic.root.rank
        # torchrun's "first observed failure" is the earliest error-file time, in whole seconds: when the
        # failing rank takes the others down within the same second, a tie can name a rank whose only error
        # is the consequence (a peer closed the connection). A rank with an error of its own comes first.
        consequence_only = any(c.rank == root_rank for c in chain_candidates) and \
            all(c.signature.symptom for c in chain_candidates if c.rank == root_rank)
        if consequence_only and primaries:
            root_rank = max(primaries, key=lambda c: c.key).rank
    elif len(ranks) > 1 or (ranks and (winner.signature.symptom or winner.signature.kind == "other")):
        if primaries:
            root_rank = max(primaries, key=lambda c: c.key).rank
        elif winner.rank is not None:
            root_rank = winner.rank

    if root_rank is not None:
        of_rank = [c for c in chain_candidates if c.rank == root_rank]
        if of_rank:
            best = max(of_rank, key=lambda c: c.key)
            specific = best.signature.kind != "other" and not best.signature.symptom
            if specific and (winner.signature.symptom or winner.signature.kind == "other"
                             or best.signature.priority >= winner.signature.priority):
                winner = best
            elif not specific and (winner.signature.symptom or winner.signature.kind == "other") and (
                    len(ranks) > 1 or elastic is not None):  # one rank's prefixes alone say nothing of a rank failure
                rank_failure = _rank_failure_signature()
                winner = Candidate(rank_failure, dict(winner.facts) if winner.signature is rank_failure else {},
                                   best.chain, best.block, rank=root_rank)

    notes: dict[int, str] = {}
    for rank in sorted(ranks | ({root_rank} if root_rank is not None else set())):
        of_rank = [c for c in candidates if c.rank == rank]
        if of_rank:
            notes[rank] = _describe(max(of_rank, key=lambda c: c.key))
    if elastic:
        for failure in elastic.others + ([elastic.root] if elastic.root else []):
            if failure.rank is None:
                continue
            if failure.signal == "SIGTERM" or failure.exitcode == -15:
                notes.setdefault(failure.rank, "stopped by torchrun (SIGTERM) after the first failure")
            elif failure.exitcode is not None:
                notes.setdefault(failure.rank, f"exited with code {failure.exitcode}")
    return Selection(winner, root_rank, notes, elastic, candidates)


# A launcher's exception that only says the child process failed (accelerate launch,
# mp.spawn): the child's own message, printed before it, is the failure.
_CHILD_FAILED = ("CalledProcessError", "ProcessRaisedException", "ProcessExitedException")
_MESSAGE_WINDOW = 200_000  # characters at the end of the log searched for a message-only failure


# Lines that report, not fail: warnings (`UserWarning: Plan failed with a cudnnException ...`,
# `[W reducer.cpp:1346] Warning: ...`, "(Triggered internally at ...)") and info logs (`NCCL INFO`).
# c10 reports a CUDA error met in a destructor as a warning (`Warning: CUDA warning: an illegal memory
# access was encountered (function destroyEvent)`): the error is real and sticky, so that line is one.
_NOT_AN_ERROR = re.compile(r"\b[A-Z]\w*Warning\b|^\s*\[W[ \d]|\bWarning:(?!\s*CUDA warning:)|\bWARN(?:ING)?\b|"
                           r"\bINFO\b|\(Triggered internally at ")


# A progress line that names an error is one (`FloatingPointError: Loss became infinite or NaN at
# iteration=166!`).
_ERROR_WORD = re.compile(r"[a-z]Error\b|\bError:|\w Exception\b|Exception:")


def _message_only(lines: list[Line], joined: str, offsets: list[int]) -> Candidate | None:
    """A known failure message with no `Type: message` line to carry it: a bare message
    (`Trying to backward through the graph a second time ...`), a logger's line
    (`ERROR: Error(s) in loading state_dict for ...`), a rank's indented continuation lines,
    or a message printed before a traceback that was cut. The exception signatures are
    searched in the log's tail (bounded, so a long log stays linear), highest priority first;
    the log is their context. Training-progress lines (`epoch 4 loss: nan`) report values,
    not errors: the loss-curve detectors read those; warnings and info lines are no failures."""
    start = max(0, len(joined) - _MESSAGE_WINDOW)
    window = joined[start:]
    for signature in _exception_signatures():
        if signature.context and not any(p.search(window) for p in signature.context):
            continue
        for pattern in signature.patterns:
            for found in pattern.finditer(window):
                index = bisect.bisect_right(offsets, start + found.start()) - 1
                line = lines[index]
                if (PROGRESS.search(line.text) and not _ERROR_WORD.search(line.text)) \
                        or _NOT_AN_ERROR.search(line.text):
                    continue
                facts = {k: v for k, v in found.groupdict().items() if v is not None}
                return Candidate(signature, facts, line=index, rank=line.rank,
                                 evidence=[line.text.strip(), "the message was found without its exception line"],
                                 message=_with_continuation(lines, index))
    return None


_CONTINUATION_LINES = 40


def _with_continuation(lines: list[Line], index: int) -> str:
    """The message on line `index` and the lines that continue it (`Missing key(s) in state_dict:
    ...` under `Error(s) in loading state_dict for Net:`), up to a blank line, a traceback or a new
    log record."""
    text = [lines[index].text]
    for line in lines[index + 1:index + 1 + _CONTINUATION_LINES]:
        if (not line.text.strip() or HEADER in line.text or LOG_RECORD.search(line.text)
                or line.rank != lines[index].rank):
            break
        text.append(line.text)
    return "\n".join(text)


PROGRESS = re.compile(r"(?i)\b(epoch|step|iter(?:ation)?|batch)\b\s*[:=#]?\s*\[?(\d+)(?:\s*/\s*(\d+))?")
_HANDLED_PROGRESS_LINES = 2


def _mark_handled(lines: list[Line], candidates: list[Candidate]) -> None:
    """A traceback followed by more training progress (epoch/step lines) of its
    rank, before the next traceback, was caught and logged: not the fatal error.
    Linear: each chain finds the next start by bisection and scans at most 500 lines."""
    starts = sorted(c.chain.start for c in candidates if c.chain is not None)
    for candidate in candidates:
        chain = candidate.chain
        if chain is None or chain.final.exception is None:
            continue
        following = bisect.bisect_left(starts, chain.end)
        stop = min(starts[following] if following < len(starts) else len(lines), chain.end + 500)
        progress = 0
        for index in range(chain.end, stop):
            line = lines[index]
            if line.rank == chain.rank and PROGRESS.search(line.text):
                progress += 1
                if progress >= _HANDLED_PROGRESS_LINES:
                    candidate.handled = True
                    break


def _rank_failure_signature() -> Signature:
    from .signatures import load_signatures

    return next(s for s in load_signatures() if s.id == "distributed-rank-failure")
