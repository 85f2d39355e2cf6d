"""Traceback text (+ live probes) -> Diagnosis.

normalise -> parse chains -> select the explaining failure -> facts from the
signature's regexes and derived values -> title, root cause, fixes from its
templates -> correlate with lint findings -> Diagnosis.
"""

from __future__ import annotations

import linecache
import re
from pathlib import Path
from typing import Any

from ..model import Diagnosis, ExceptionInfo, FixSuggestion, Frame, Hypothesis, Probes
from .calibration import calibrated, coherent
from .correlate import correlate as correlate_findings
from .kinds import FALLBACK, Failure, derive, hook, one_line, recognised_live
from .normalize import Line, decode, normalize
from .parse import Block, Chain, parse_chains
from .probe_evidence import gather, with_notes
from .select import PROGRESS as _PROGRESS
from .select import Candidate, Selection, deepest_user_frame, exception_text, select



def diagnose_text(text: str | bytes, *, probes: Probes | None = None, correlate: bool = True,
                  base_dir: str | Path | None = None) -> Diagnosis:
    """Diagnose a traceback or training log. Never raises: unreadable or
    unrecognised input gives kind "other" with low confidence.

    `probes` (from a live debugger, may be None) enrich the result in one pass
    (probe_evidence.gather): tensors with NaN/Inf counts, the CUDA memory (a
    `cuda_memory` probe, or the `env` probe's "cuda_memory" entry) and what the
    kind's `enrich_live` hook finds become evidence and root-cause notes; the
    `env` probe's value goes to details["live_env"], all probes to
    details["probes"]. A kind's `recognise_live` hook may name an unrecognised
    failure (NaN tensors make it nan-inf). `probes.frame` is the location when
    the text has no user frame, and `probes.rank` the rank.
    """
    try:
        if isinstance(text, (bytes, bytearray)):
            text = decode(bytes(text))
        elif not isinstance(text, str):
            text = str(text)
        return with_references(_hide_internal(_diagnose(text, probes, correlate,
                                                      Path(base_dir) if base_dir else Path.cwd())))
    except Exception as exc:  # the promise is "never raises": report, do not crash the caller
        return Diagnosis(
            kind=FALLBACK, mode="crash", title="Could not analyse the input",
            root_cause=f"traindoctor failed while reading this log ({type(exc).__name__}: {exc}).",
            evidence=(), fixes=(), confidence=0.0, location=None, frames=(), exception=None,
            details={"internal_error": f"{type(exc).__name__}: {exc}"},
        )


def _hide_internal(diagnosis: Diagnosis) -> Diagnosis:
    """The user's traceback, not ours: frames of traindoctor's bootstrap and hooks, debugpy,
    pydevd and runpy (internal_frames.py) leave `frames`; details["hidden_frames"] says how many."""
    import dataclasses

    from ..internal_frames import is_internal_path

    shown = tuple(f for f in diagnosis.frames if not is_internal_path(f.path))
    if len(shown) == len(diagnosis.frames):
        return diagnosis
    details = dict(diagnosis.details)
    details["hidden_frames"] = len(diagnosis.frames) - len(shown)
    return dataclasses.replace(diagnosis, frames=shown, details=details)


def with_references(diagnosis: Diagnosis) -> Diagnosis:
    """`diagnosis` with the references of its kind and fixes (rules/references/), for the run's torch."""
    import dataclasses

    from .references import references_for, torch_version_of

    refs = references_for(diagnosis.kind, [f.title for f in diagnosis.fixes], torch_version_of(diagnosis.details))
    return dataclasses.replace(diagnosis, references=tuple(refs))


def _diagnose(text: str, probes: Probes | None, correlate: bool, base_dir: Path) -> Diagnosis:
    lines = normalize(text)
    chains = parse_chains(lines)
    selection = select(lines, chains)
    candidate = selection.candidate
    claimed = recognised_live(probes) if probes is not None and candidate.signature.kind == FALLBACK else None
    if claimed:
        from .signatures import load_signatures

        signature = next(s for s in load_signatures() if s.id == claimed)
        candidate = Candidate(signature, {}, candidate.chain, candidate.block, rank=candidate.rank)
    signature = candidate.signature
    chain, block = candidate.chain, candidate.block
    exception = block.exception if block is not None else None
    frames = chain.frames if chain is not None else ()
    location = _location(chain, block)
    if location is None and chain is None:
        # a failure read from a log line (a kernel assertion, a watchdog line): its traceback is
        # the last one of the failing rank (when ranks are known) that reaches the user's code
        failing = candidate.rank if candidate.rank is not None else selection.root_rank
        location = next(filter(None, (deepest_user_frame(c.frames) for c in reversed(chains)
                                      if failing is None or c.rank == failing)), None)
    if location is None and not any(c.frames for c in chains):
        from .parse import frame_fragments

        location = deepest_user_frame(frame_fragments(lines))  # a frame named in prose or cut at its start
    log_text = "\n".join(l.text for l in lines)
    exc_text = exception_text(block) if block is not None else (candidate.message or "\n".join(candidate.evidence))

    facts: dict[str, Any] = dict(candidate.facts)
    for key, value in signature.extract_facts(exc_text, log_text).items():
        facts.setdefault(key, value)
    facts.update(derive(signature.kind, facts, exc_text))
    details: dict[str, Any] = {"signature": signature.id}
    evidence: list[str] = []
    if exception is not None:
        evidence.append(one_line(exception))
    evidence.extend(e for e in candidate.evidence if e not in evidence)

    rank = candidate.rank if candidate.rank is not None else selection.root_rank
    if rank is None and probes is not None:
        rank = probes.rank
    _common_facts(facts, exception, location, rank)
    refine = hook(signature.kind, "refine")
    if refine is not None:
        failure = Failure(signature, facts, details, evidence, chain, block, chains, lines, selection, base_dir,
                          location, rank)
        refine(failure)
        location, rank = failure.location, failure.rank
    if location is None and probes is not None and probes.frame is not None:
        location = probes.frame
        facts.setdefault("location_site", f"{location.path}:{location.line}")
    live = None
    if probes is not None:
        live = gather(signature.kind, exception.message if exception is not None else "", probes, evidence)
        details.update(live.details)
        if probes.rank is not None:
            rank = probes.rank  # the live process knows its rank
    if location is not None:
        evidence.append(f"{location.path}:{location.line} in {location.function}"
                        + (f": {location.code}" if location.code else ""))

    if signature.kind == FALLBACK and claimed is None:
        from .evidence_model import ordinary_error

        ordinary = ordinary_error(lines, chains)
        if ordinary is not None:  # a cut paste that still names a type no kind explains: no kind to infer
            facts.setdefault("ordinary_type", ordinary)
            facts.setdefault("exception_type", ordinary)
        else:
            inferred = _from_partial_evidence(lines, chains, signature, evidence, location, rank, frames, exception,
                                              details, log_text)
            if inferred is not None:
                return inferred

    title = signature.title_for(facts)
    root_cause = with_notes(signature.root_cause_for(facts), live.notes if live is not None else [])
    fixes = signature.fix_suggestions(facts)
    # A worker error of a known kind: its own fixes follow the worker ones.
    fixes.extend(FixSuggestion(t, d) for t, d in details.pop("inner_fixes", [])[:2])
    confidence = _confidence(signature, exception, location, chain)
    if signature.kind == FALLBACK and exception is None:
        # a cut paste naming an ordinary type is as sure as that exception shown whole
        confidence = _confidence(signature, ExceptionInfo(facts["ordinary_type"], ""), location, chain) \
            if "ordinary_type" in facts else 0.05

    related = ()
    if correlate and signature.related_rules and frames:
        correlations = correlate_findings(frames, signature.related_rules, base_dir)
        related = tuple(c.finding for c in correlations)
        for c in correlations[:5]:
            f = c.finding
            evidence.append(f"{f.code} at {_shown(f.path, base_dir)}:{f.range.start.line + 1}: {f.message}")
        if correlations:
            confidence = min(0.99, confidence + 0.05 + (0.05 if any(c.on_stack for c in correlations) else 0))
            first = correlations[0].finding
            fixes.insert(0, FixSuggestion(
                first.fix.title if first.fix else f"Fix {first.code} ({first.name})",
                f"{_shown(first.path, base_dir)}:{first.range.start.line + 1}: {first.message}",
                {"path": first.path, "line": first.range.start.line + 1}))
            details["line_to_change"] = {"path": first.path, "line": first.range.start.line + 1,
                                         "code": first.code, "fix": first.fix.title if first.fix else None}

    if live is not None:
        evidence.extend(live.evidence)  # after the location and the lint findings, as the fronts list them

    from .environment import environment_from_log

    run_env = environment_from_log(log_text, frames)
    if run_env:
        details["run_env"] = run_env
    progress = _progress(lines, chain.start if chain is not None else len(lines))
    if progress:
        details["progress"] = progress
    if selection.rank_notes:
        details["ranks"] = {str(r): note for r, note in selection.rank_notes.items()}
    if selection.root_rank is not None:
        details["root_cause_rank"] = selection.root_rank
    details["facts"] = {k: v for k, v in facts.items() if isinstance(v, (str, int, float, bool)) and v != ""}
    evidence = list(dict.fromkeys(evidence))
    primary = (confidence, signature.kind, root_cause or title, tuple(evidence), tuple(fixes))
    ranked = _hypotheses(primary, signature, facts, exc_text, selection, candidate)
    details["raw_confidences"] = [round(h[0], 3) for h in ranked]
    shares = coherent([h[1] for h in ranked], [calibrated(h[0]) for h in ranked])
    from .partial import kind_check

    hypotheses = tuple(Hypothesis(kind, cause, round(share, 2), ev, fx, kind_check(kind))
                       for (_, kind, cause, ev, fx), share in zip(ranked, shares))
    if signature.kind == FALLBACK and claimed is None:
        hypotheses += _alternatives(lines, chains, hypotheses[0].confidence)
    return Diagnosis(
        kind=signature.kind,
        mode=signature.mode,
        title=title,
        root_cause=root_cause,
        evidence=tuple(evidence),
        fixes=tuple(fixes),
        confidence=hypotheses[0].confidence,
        hypotheses=hypotheses,
        location=location,
        frames=frames,
        exception=exception,
        related_findings=related,
        rank=rank,
        details=details,
        cause_location=_cause_location(facts, details, location),
    )


_SITE = re.compile(r"^(?P<path>.+):(?P<line>\d+)$")


def _cause_location(facts: dict[str, Any], details: dict[str, Any], location: Frame | None) -> dict[str, Any] | None:
    """The line that causes the failure when it is not the failing frame: the in-place statement
    (inplace-modification), the forward op anomaly mode names (the failing frame is the backward
    call), or the correlated lint finding's line. None when the failing frame is the cause."""
    candidates: list[tuple[str, str, str]] = []  # (path:line, code, why)
    if facts.get("inplace_site"):
        candidates.append((str(facts["inplace_site"]), str(facts.get("inplace_code") or ""),
                           f"the in-place operation that modified `{facts.get('inplace_name', '')}` after the forward "
                           "pass saved it for backward"))
    raise_at = details.get("raise_location")
    if facts.get("forward_site") and isinstance(raise_at, dict):
        candidates.append((str(facts["forward_site"]), str(facts.get("forward_code") or ""),
                           f"the forward operation anomaly mode names; the error was raised at the backward call "
                           f"{raise_at.get('path')}:{raise_at.get('line')}"))
    change = details.get("line_to_change")
    if isinstance(change, dict) and change.get("path") and change.get("line"):
        linecache.checkcache(str(change["path"]))  # the server lives long: the file may have changed
        candidates.append((f"{change['path']}:{change['line']}",
                           linecache.getline(str(change["path"]), int(change["line"])).strip(),
                           f"{change.get('code')}: the line the correlated check flags"
                           + (f" ({change['fix']})" if change.get("fix") else "")))
    for site, code, why in candidates:
        found = _SITE.match(site)
        if found is None:
            continue
        path, line = found.group("path"), int(found.group("line"))
        failing = isinstance(raise_at, dict) and (raise_at.get("path"), raise_at.get("line")) == (path, line)
        if not failing and not (raise_at is None and location is not None and (location.path, location.line) == (path, line)):
            return {"path": path, "line": line, "code": code, "why": why}
    return None


_MAX_HYPOTHESES = 4
_PARTIAL_CEILING = 0.85  # evidence without the message never claims more than this (raw)


def _from_partial_evidence(lines: list[Line], chains: list[Chain], fallback_signature, evidence: list[str],
                           location: Frame | None, rank: int | None, frames: tuple, exception: ExceptionInfo | None,
                           details: dict[str, Any], log_text: str) -> Diagnosis | None:
    """No signature explains the log: rank the kinds its frames and lines point to
    (partial.infer); when no clue is strong enough, the kinds the structure of its evidence
    points to (evidence_model: the exception's type, the vocabulary of its message, the modules of
    its innermost frames, its log lines). None when there is no evidence: the log stays `other`."""
    from .partial import infer, threshold

    found = infer(lines, chains)
    kept, shares, source = _from_structure(lines, chains)
    if found and found[0].score >= threshold():
        clue_kept = [h for h in found if h.score >= threshold() / 2][:_MAX_HYPOTHESES]
        raws = [min(h.score, _PARTIAL_CEILING) for h in clue_kept]
        clue_shares = coherent([h.kind for h in clue_kept], [calibrated(r, "partial") for r in raws])
        # the clues and the model both read the frames; the more confident one answers (a message
        # in the torch vocabulary that no signature knows outweighs a generic innermost frame); when
        # both name the same kind, the clue's account does, since it names the evidence itself
        if not kept or kept[0].kind in (FALLBACK, clue_kept[0].kind) or clue_shares[0] >= shares[0]:
            if kept and kept[0].kind == clue_kept[0].kind and shares[0] > clue_shares[0]:
                clue_shares = _with_top(clue_shares, shares[0])  # two readings agree: the surer one's confidence
            kept, shares = clue_kept, clue_shares
            source = {"signature": f"partial:{clue_kept[0].clues[0]}",
                      "partial_evidence": [{"kind": h.kind, "score": round(h.score, 3), "clues": h.clues}
                                           for h in clue_kept],
                      "raw_confidences": [round(r, 3) for r in raws]}
        else:
            kept = _with_clue_accounts(kept, clue_kept)
    if not kept or kept[0].kind == FALLBACK:
        return None  # the unrecognised failure as it is; _alternatives lists what it may be
    return _inferred(kept, shares, source, lines, fallback_signature, evidence, location, rank, frames, exception,
                     details, log_text)


def _with_clue_accounts(model: list, clues: list) -> list:
    """The model's hypotheses (it answers) with the clues' accounts below its first: a kind both
    name keeps the model's rank and confidence but says which frame or line supports it and how to
    decide; the clues' first kind, when the model does not list it, takes the model's last place."""
    by_kind = {h.kind: h for h in clues}
    out = [model[0]] + [by_kind.get(h.kind, h) for h in model[1:]]
    if clues[0].kind not in {h.kind for h in out} and len(out) > 1:
        out[-1] = clues[0]
    return out


def _with_top(shares: list[float], top: float) -> list[float]:
    """`shares` with the first raised to `top`, the others scaled so that they sum to at most 1."""
    rest = sum(shares[1:])
    scale = min(1.0, (1 - top) / rest) if rest > 0 else 1.0
    return [top, *(share * scale for share in shares[1:])]


def _from_structure(lines: list[Line], chains: list[Chain]) -> tuple[list, list[float], dict]:
    """Hypotheses from the evidence model, as partial hypotheses with their probabilities; none
    when the paste shows no failure at all (no traceback, no exception, no failure line)."""
    from .evidence_model import OTHER, failure_shown, observe, rank as rank_kinds
    from .partial import PartialHypothesis, kind_check, kind_title

    observed = observe(lines, chains)
    ranked = rank_kinds(observed)
    if not ranked:
        return [], [], {}
    if not failure_shown(observed):
        return [], [], {}
    kept = []
    for entry in ranked[:_MAX_HYPOTHESES]:
        named = "no known failure" if entry.kind == OTHER else kind_title(entry.kind)
        kept.append(PartialHypothesis(
            entry.kind, entry.probability,
            f"No signature reads this paste's message; what it shows is most like {named}.",
            kind_check(entry.kind), list(entry.supports), [], [f"model:{f}" for f in entry.features] or ["model"]))
    shares = coherent([h.kind for h in kept], [h.score for h in kept])
    if "shape-cut" in observed and shares[0] > _PARTIAL_CEILING:
        shares = _with_top(shares, _PARTIAL_CEILING)  # without its message, no surer than a clue may be
    source = {"signature": "evidence-model",
              "evidence_model": [{"kind": h.kind, "probability": round(h.score, 3), "features": h.clues} for h in kept],
              "raw_confidences": [round(h.score, 3) for h in kept]}
    return kept, shares, source


def _alternatives(lines: list[Line], chains: list[Chain], unknown: float) -> tuple[Hypothesis, ...]:
    """What an unrecognised failure may be, when a frame or a log line shows something
    (evidence_model.alternatives_shown): the evidence model's kinds, each no likelier than the
    unrecognised answer itself, since nothing in the paste decides between them."""
    from .evidence_model import OTHER, alternatives_shown, observe, rank as rank_kinds
    from .partial import kind_check, kind_title
    from .signatures import load_signatures

    observed = observe(lines, chains)
    if not alternatives_shown(observed):
        return ()
    first_of_kind = {s.kind: s for s in reversed(load_signatures())}
    out = []
    for entry in [r for r in rank_kinds(observed) if r.kind != OTHER][:_MAX_HYPOTHESES - 1]:
        signature = first_of_kind.get(entry.kind)
        if signature is None:
            continue
        out.append(Hypothesis(
            entry.kind, f"The message may say {kind_title(entry.kind)}; nothing in the paste decides it.",
            round(max(0.01, min(entry.probability, unknown - 0.01)), 2), entry.supports,
            tuple(FixSuggestion(t, d) for t, d in signature.fixes_for({})[:2]), kind_check(entry.kind)))
    return tuple(out)


def _inferred(kept: list, shares: list[float], source: dict[str, Any], lines: list[Line], fallback_signature,
              evidence: list[str], location: Frame | None, rank: int | None, frames: tuple,
              exception: ExceptionInfo | None, details: dict[str, Any], log_text: str) -> Diagnosis:
    """The diagnosis of ranked hypotheses inferred without a signature (`kept`, best first)."""
    from .partial import inferred_fixes, kind_check, kind_title
    from .signatures import load_signatures

    best = kept[0]
    first_of_kind = {s.kind: s for s in reversed(load_signatures())}
    signature = first_of_kind.get(best.kind, fallback_signature)

    def fixes_of(hypothesis) -> tuple[FixSuggestion, ...]:
        kind_signature = first_of_kind.get(hypothesis.kind)
        generic = inferred_fixes(hypothesis.kind)
        if generic is None:
            generic = kind_signature.fixes_for({}) if kind_signature is not None else []
        # a clue's own fixes answer its evidence; a kind's fixes any of its causes
        merged = list(dict.fromkeys(hypothesis.fixes or generic))
        return tuple(FixSuggestion(t, d) for t, d in merged[:3])

    hypotheses = tuple(Hypothesis(h.kind, h.cause, round(share, 2), tuple(h.supports), fixes_of(h),
                                  h.check or kind_check(h.kind))
                       for h, share in zip(kept, shares))
    evidence = list(dict.fromkeys([*best.supports, *evidence]))
    details = dict(details)
    details.update(source)
    details["check"] = best.check
    from .environment import environment_from_log

    run_env = environment_from_log(log_text, frames)
    if run_env:
        details["run_env"] = run_env
    missing = "the error message is missing" if exception is None else "no known message"
    title = f"{kind_title(best.kind)} (inferred: {missing})"
    root_cause = (f"{best.cause} The paste does not show a message traindoctor knows, so this is inferred from what "
                  f"it does show; to decide: {best.check}")
    return Diagnosis(
        kind=best.kind, mode=signature.mode, title=title, root_cause=root_cause, evidence=tuple(evidence),
        fixes=hypotheses[0].fixes, confidence=hypotheses[0].confidence, hypotheses=hypotheses, location=location,
        frames=frames, exception=exception, rank=rank, details=details,
    )


def _hypotheses(primary: tuple, signature, facts: dict[str, Any], exc_text: str, selection: Selection,
                winner: Candidate) -> list[tuple]:
    """The winning explanation first, then (ranked by score) the signature's own alternatives,
    other signatures that match the same message, and other failures in the log.

    The score orders the hypotheses; the raw confidence is a claim about the kind. A hypothesis
    of a kind listed before it is another cause of that kind read from the same evidence, so
    it follows that kind's first hypothesis and carries its raw confidence (an alternative's
    weight only orders the causes)."""
    from .signatures import exception_signatures, load_signatures

    raw = primary[0]
    out: list[tuple] = []
    seen = {(primary[1], primary[2])}

    def add(score: float, kind: str, cause: str, evidence: tuple, fixes: tuple) -> None:
        if (kind, cause) not in seen and cause:
            seen.add((kind, cause))
            out.append((max(0.01, min(score, raw - 0.01)), kind, cause, evidence, fixes))

    def kind_fixes(kind: str) -> tuple:
        first = next((s for s in load_signatures() if s.kind == kind), None)
        return tuple(FixSuggestion(t, d) for t, d in first.fixes_for({})[:3]) if first else ()

    for kind, template, weight in signature.alternatives:
        if template.applies(facts):
            add(raw * weight, kind, template.render(facts)[0], (), kind_fixes(kind))
    if exc_text:
        for other in exception_signatures():
            if other.kind in (signature.kind, FALLBACK) or other.context:
                continue
            found = other.match(exc_text)
            if found is not None:
                add(other.confidence * 0.5, other.kind, other.title_for(found), (), kind_fixes(other.kind))
    for candidate in selection.candidates:
        if candidate is winner or candidate.signature.kind in (FALLBACK, signature.kind) or candidate.signature.symptom:
            continue
        evidence = tuple(candidate.evidence[:2])
        add(candidate.signature.confidence * (0.3 if candidate.handled else 0.45), candidate.signature.kind,
            candidate.signature.title_for(candidate.facts), evidence, kind_fixes(candidate.signature.kind))
    out.sort(key=lambda h: -h[0])
    ranked = [primary] + out[:_MAX_HYPOTHESES - 1]
    kinds = list(dict.fromkeys(kind for _, kind, *_ in ranked))
    ranked.sort(key=lambda h: kinds.index(h[1]))  # the causes of one kind together, as their kind ranks
    kind_raw: dict[str, float] = {}
    for score, kind, *_ in ranked:
        kind_raw.setdefault(kind, score)
    return [(kind_raw[kind], kind, *rest) for _, kind, *rest in ranked]


def _shown(path: str, base_dir: Path) -> str:
    """A path as the user knows it: relative to the project when inside it."""
    try:
        return str(Path(path).resolve().relative_to(base_dir.resolve()))
    except (ValueError, OSError):
        return path


def _location(chain: Chain | None, block: Block | None) -> Frame | None:
    if chain is None:
        return None
    if block is not None:
        index = chain.blocks.index(block)
        focus = [block] + [b for b in chain.blocks[index + 1:] if b.relation == "original"]
        frame = deepest_user_frame([f for b in focus for f in b.frames])
        if frame is not None:
            return frame
    return deepest_user_frame(chain.frames)


def _common_facts(facts: dict[str, Any], exception: ExceptionInfo | None, location: Frame | None,
                  rank: int | None) -> None:
    if exception is not None:
        first = exception.message.strip().splitlines()
        facts.setdefault("exception_type", exception.type)
        facts.setdefault("exception_head", (first[0][:200] if first else "").strip() or None)
    if location is not None:
        facts.setdefault("location_site", f"{location.path}:{location.line}")
    if rank is not None:
        facts.setdefault("rank", rank)


def _confidence(signature, exception: ExceptionInfo | None, location: Frame | None, chain: Chain | None) -> float:
    confidence = signature.confidence
    if signature.kind == FALLBACK:
        return 0.3 if exception is not None else 0.05
    if location is None and signature.location_expected:
        confidence -= 0.1
    if chain is not None and exception is None:
        confidence -= 0.1
    if exception is not None and _CUT_TYPE.search(exception.type) is None:
        confidence -= 0.15  # a paste cut inside the exception's type: only the surviving lines support the kind
    return max(0.05, confidence)


_CUT_TYPE = re.compile(r"(?:Error|Exception|Exit|Interrupt|Iteration|Warning|Failure|Fault|Timeout|Group|"
                       r"Killed|Assert\w*|Unsupported|Failed)$|^[a-z_]+$|^[A-Z][a-z]+$")


def _progress(lines: list[Line], before: int) -> dict[str, int]:
    """The last epoch/step the log mentions before the failure."""
    found: dict[str, int] = {}
    for line in reversed(lines[max(0, before - 2000):before]):
        if not any(ch.isdigit() for ch in line.text):
            continue
        for match in _PROGRESS.finditer(line.text):
            name = match.group(1).lower()
            name = "step" if name.startswith(("iter", "batch")) else name
            if name not in found:
                found[name] = int(match.group(2))
                if match.group(3):
                    found[f"{name}_total"] = int(match.group(3))
        if "epoch" in found and "step" in found:
            break
    return found
