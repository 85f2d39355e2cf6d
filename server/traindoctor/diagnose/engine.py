"""Traceback text (+ live probes) -> Diagnosis.

normalise -> parse chains -> select the explaining failure -> facts from the
signature's regexes and derived values -> title, root cause, fixes from its
templates -> correlate with lint findings -> Diagnosis.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..model import Diagnosis, ExceptionInfo, FixSuggestion, Frame, Hypothesis, Probes
from .calibration import calibrated
from .correlate import correlate as correlate_findings
from .extract import derive, human_size
from .normalize import Line, decode, normalize
from .parse import Block, Chain, parse_chains
from .select import PROGRESS as _PROGRESS
from .select import Candidate, Selection, deepest_user_frame, exception_text, select



def diagnose_text(text: str | bytes, *, probes: Probes | None = None, correlate: bool = True,
                  base_dir: str | Path | None = None) -> Diagnosis:
    """Diagnose a traceback or training log. Never raises: unreadable or
    unrecognised input gives kind "other" with low confidence.

    `probes` (from a live debugger, may be None) enrich the result:
    tensors with NaN/Inf counts become evidence (and turn an unrecognised
    failure into nan-inf), a `cuda_memory` probe's value, or the `env` probe's
    "cuda_memory" entry (a dict of byte counts: allocated, reserved, free, total)
    becomes evidence, the `env` probe's value goes to details["live_env"],
    `probes.frame` is the location when the text has no user frame, and
    `probes.rank` the rank when the text does not say.
    """
    try:
        if isinstance(text, (bytes, bytearray)):
            text = decode(bytes(text))
        elif not isinstance(text, str):
            text = str(text)
        return _diagnose(text, probes, correlate, Path(base_dir) if base_dir else Path.cwd())
    except Exception as exc:  # the promise is "never raises": report, do not crash the caller
        return Diagnosis(
            kind="other", mode="crash", title="Could not analyse the input",
            root_cause=f"traindoctor failed while reading this log ({type(exc).__name__}: {exc}).",
            evidence=(), fixes=(), confidence=0.0, location=None, frames=(), exception=None,
            details={"internal_error": f"{type(exc).__name__}: {exc}"},
        )


def _diagnose(text: str, probes: Probes | None, correlate: bool, base_dir: Path) -> Diagnosis:
    lines = normalize(text)
    chains = parse_chains(lines)
    selection = select(lines, chains)
    candidate = selection.candidate
    if probes is not None and candidate.signature.kind == "other" and _nan_tensors(probes):
        from .signatures import load_signatures

        nan = next(s for s in load_signatures() if s.id == "nan-value-error")
        candidate = Candidate(nan, {}, candidate.chain, candidate.block, rank=candidate.rank)
    signature = candidate.signature
    chain, block = candidate.chain, candidate.block
    exception = block.exception if block is not None else None
    frames = chain.frames if chain is not None else ()
    location = _location(chain, block)
    log_text = "\n".join(l.text for l in lines)
    exc_text = exception_text(block) if block is not None else "\n".join(candidate.evidence)

    facts: dict[str, Any] = dict(candidate.facts)
    for key, value in signature.extract_facts(exc_text, log_text).items():
        facts.setdefault(key, value)
    facts.update(derive(signature.kind, facts, exc_text))
    details: dict[str, Any] = {"signature": signature.id}
    evidence: list[str] = []
    if exception is not None:
        evidence.append(_one_line(exception))
    evidence.extend(e for e in candidate.evidence if e not in evidence)

    rank = candidate.rank if candidate.rank is not None else selection.root_rank
    if rank is None and probes is not None:
        rank = probes.rank
    _common_facts(facts, exception, location, rank)
    location, rank = _kind_facts(signature.kind, signature.id, facts, details, evidence, chain, block, chains,
                                 lines, selection, location, rank)
    _code_facts(signature.kind, facts, evidence, frames, chains, base_dir)
    if location is None and probes is not None and probes.frame is not None:
        location = probes.frame
        facts.setdefault("location_site", f"{location.path}:{location.line}")
    if probes is not None:
        _probe_evidence(probes, evidence, details)
    if location is not None:
        evidence.append(f"{location.path}:{location.line} in {location.function}"
                        + (f": {location.code}" if location.code else ""))

    title = signature.title_for(facts)
    root_cause = signature.root_cause_for(facts)
    fixes = [FixSuggestion(t, d) for t, d in signature.fixes_for(facts)]
    # A worker error of a known kind: its own fixes follow the worker ones.
    fixes.extend(FixSuggestion(t, d) for t, d in details.pop("inner_fixes", [])[:2])
    confidence = _confidence(signature, exception, location, chain)
    if signature.kind == "other" and exception is None:
        confidence = 0.05

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
                f"{_shown(first.path, base_dir)}:{first.range.start.line + 1}: {first.message}"))
            details["line_to_change"] = {"path": first.path, "line": first.range.start.line + 1,
                                         "code": first.code, "fix": first.fix.title if first.fix else None}

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
    hypotheses = tuple(Hypothesis(kind, cause, round(calibrated(raw), 2), ev, fx) for raw, kind, cause, ev, fx in ranked)
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
    )


_MAX_HYPOTHESES = 4


def _hypotheses(primary: tuple, signature, facts: dict[str, Any], exc_text: str, selection: Selection,
                winner: Candidate) -> list[tuple]:
    """The winning explanation first, then (ranked by raw confidence) the signature's own
    alternatives, other signatures that match the same message, and other failures in the log."""
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
            if other.kind in (signature.kind, "other") or other.context:
                continue
            found = other.match(exc_text)
            if found is not None:
                add(other.confidence * 0.5, other.kind, other.title_for(found), (), kind_fixes(other.kind))
    for candidate in selection.candidates:
        if candidate is winner or candidate.signature.kind in ("other", signature.kind) or candidate.signature.symptom:
            continue
        evidence = tuple(candidate.evidence[:2])
        add(candidate.signature.confidence * (0.3 if candidate.handled else 0.45), candidate.signature.kind,
            candidate.signature.title_for(candidate.facts), evidence, kind_fixes(candidate.signature.kind))
    out.sort(key=lambda h: -h[0])
    return [primary] + out[:_MAX_HYPOTHESES - 1]


def _shown(path: str, base_dir: Path) -> str:
    """A path as the user knows it: relative to the project when inside it."""
    try:
        return str(Path(path).resolve().relative_to(base_dir.resolve()))
    except (ValueError, OSError):
        return path


def _one_line(exc: ExceptionInfo) -> str:
    message = " ".join(exc.message.split())
    if len(message) > 300:
        message = message[:297] + "..."
    return f"{exc.type}: {message}" if message else exc.type


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


def _kind_facts(kind: str, signature_id: str, facts: dict[str, Any], details: dict[str, Any], evidence: list[str],
                chain: Chain | None, block: Block | None, chains: list[Chain], lines: list[Line],
                selection: Selection, location: Frame | None, rank: int | None) -> tuple[Frame | None, int | None]:
    """Facts that need more than one exception's text; may move the location or clear the rank."""
    if kind == "dataloader-worker" and chain is not None and block is not None:
        index = chain.blocks.index(block)
        inner = next((b for b in chain.blocks[index + 1:] if b.relation == "original"), None)
        if inner is not None and inner.exception is not None:
            facts["inner_exception"] = _one_line(inner.exception)
            site = deepest_user_frame(inner.frames)
            if site is not None:
                facts["inner_site"] = f"{site.path}:{site.line}"
            from .select import classify_chain

            inner_match = classify_chain(Chain((inner,)))
            if inner_match.signature.kind != "other":
                details["inner_kind"] = inner_match.signature.kind
                inner_facts = dict(inner_match.facts)
                inner_facts.update(derive(inner_match.signature.kind, inner_facts, exception_text(inner)))
                details["inner_fixes"] = inner_match.signature.fixes_for(inner_facts)
            evidence.append(facts["inner_exception"])
    elif kind == "nan-inf":
        for other in chains:
            first = other.blocks[0]
            if "Traceback of forward call" in first.intro:
                frame = deepest_user_frame(first.frames)
                if frame is not None:
                    facts["forward_site"] = f"{frame.path}:{frame.line}"
                    facts["forward_code"] = frame.code or ""
                    evidence.append(f"forward call that produced it: {frame.path}:{frame.line}"
                                    + (f": {frame.code}" if frame.code else ""))
                    if location is not None:
                        details["raise_location"] = {"path": location.path, "line": location.line}
                    location = frame  # the line to change is the forward op, not loss.backward()
    elif signature_id == "distributed-rank-failure":
        elastic = selection.elastic
        if elastic is not None and elastic.root is not None:
            facts.setdefault("rank", elastic.root.rank)
            if elastic.root.exitcode is not None:
                facts["exitcode"] = elastic.root.exitcode
        if block is not None and block.exception is not None:
            facts["rank_exception"] = _one_line(block.exception)
        if location is not None:
            facts["rank_site"] = f"{location.path}:{location.line}"
        others = [f"rank {r}: {note}" for r, note in selection.rank_notes.items() if r != facts.get("rank")]
        if others:
            facts["others"] = "; ".join(others)
    elif signature_id == "distributed-nccl-timeout":
        timed_out = sorted({l.rank for l in lines if l.rank is not None and "Watchdog caught" in l.text})
        if timed_out:
            facts["timed_out_ranks"] = ", ".join(map(str, timed_out))
            details["timed_out_ranks"] = timed_out
            if len(timed_out) > 1:
                rank = None  # every rank timed out: none of them is the culprit
    elif kind == "device-side-assert":
        for line in lines:
            if "Assertion `" in line.text and "failed" in line.text:
                evidence.append(line.text.strip()[:300])
                if len(evidence) > 6:
                    break
    elif kind == "checkpoint-mismatch" and "details_keys" in facts:
        details["state_dict"] = facts.pop("details_keys")
    if kind == "cuda-oom" and "sizes_bytes" in facts:
        details["memory_bytes"] = facts.pop("sizes_bytes")
    return location, rank


def _code_facts(kind: str, facts: dict[str, Any], evidence: list[str], frames: tuple[Frame, ...],
                chains: list[Chain], base_dir: Path) -> None:
    """Facts from the user's source on the stack, for the fixes that depend on them."""
    if kind not in ("cuda-oom", "graph-reuse", "inplace-modification", "nan-inf"):
        return
    from . import source

    if kind == "nan-inf":
        forward = [f for c in chains if "Traceback of forward call" in c.blocks[0].intro for f in c.frames]
        sources = source.user_sources(tuple(frames) + tuple(forward), base_dir)
        if source.masked_inf(sources, str(facts.get("forward_code") or "")):
            facts["masked_inf"] = True
            evidence.append("the logits are masked with -inf: exp(-inf) = 0 and 0 * log(0) = 0 * -inf = NaN")
        return
    sources = source.user_sources(frames, base_dir)
    if kind == "cuda-oom":
        function = source.eval_function(frames, sources)
        if function:
            facts["eval_function"] = function
            evidence.append(f"the OOM happens in {function}(), an evaluation step that keeps autograd graphs "
                            "(no torch.no_grad())")
    elif kind == "graph-reuse":
        if source.gan_step(frames, sources):
            facts["gan"] = True
    elif kind == "inplace-modification":
        # Anomaly mode's "Traceback of forward call" (a log, or `run --anomaly`): the forward
        # function, often not on the backward's stack, is searched first.
        forward = [f for c in chains if "Traceback of forward call" in c.blocks[0].intro for f in c.frames]
        producer = deepest_user_frame(forward)
        if producer is not None:
            facts["forward_site"] = f"{producer.path}:{producer.line}"
            evidence.append(f"anomaly mode: the forward call that created it is {producer.path}:{producer.line}"
                            + (f": {producer.code}" if producer.code else ""))
            sources = source.user_sources(tuple(frames) + tuple(forward), base_dir)
        site = source.locate_inplace(str(facts.get("grad_fn") or ""), sources)
        if site is not None:
            facts.update(inplace_site=f"{site.path}:{site.line}", inplace_code=site.code, inplace_name=site.name,
                         producer_line=site.producer_line, producer_code=site.producer_code,
                         out_of_place=source.out_of_place(site))
            confirmed = producer is not None and (producer.path, producer.line) == (site.path, site.producer_line)
            evidence.append(f"in-place operation: {site.path}:{site.line}: `{site.code}` modifies `{site.name}`, "
                            f"produced by `{site.producer_code}` (line {site.producer_line})"
                            + (", the forward call anomaly mode names" if confirmed else ""))


def _confidence(signature, exception: ExceptionInfo | None, location: Frame | None, chain: Chain | None) -> float:
    confidence = signature.confidence
    if signature.kind == "other":
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


def _nan_tensors(probes: Probes):
    return [t for t in probes.tensors if (t.nan_count or 0) > 0 or (t.inf_count or 0) > 0]


def _probe_evidence(probes: Probes, evidence: list[str], details: dict[str, Any]) -> None:
    for tensor in _nan_tensors(probes)[:5]:
        evidence.append(f"live: tensor `{tensor.name}` {list(tensor.shape)} {tensor.dtype} on {tensor.device} has "
                        f"{tensor.nan_count or 0} NaN and {tensor.inf_count or 0} Inf values")
    env = probes.get("env")
    env_value = env.value if env is not None and env.ok and isinstance(env.value, dict) else {}
    memory = probes.get("cuda_memory")
    stats = memory.value if memory is not None and memory.ok else env_value.get("cuda_memory")
    if isinstance(stats, dict):
        parts = [f"{k} {human_size(v)}" for k, v in stats.items() if isinstance(v, (int, float))]
        if parts:
            evidence.append("live CUDA memory: " + ", ".join(parts))
            details["live_cuda_memory"] = dict(stats)
    if env_value:
        details["live_env"] = dict(env_value)


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
