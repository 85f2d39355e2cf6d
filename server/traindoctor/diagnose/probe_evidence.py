"""Probes -> evidence: the one pass that turns what a stopped process showed into evidence,
root-cause notes and details, whichever front stopped it (`traindoctor run`/`attach`, the
language server forwarding the editor's debug session, or `diagnose_text(probes=...)`).

What any kind gets: the failing process (DataLoader worker, rank), the tensors holding NaN/inf,
the CUDA memory, the environment. What a kind adds is its `enrich_live` hook (diagnose/kinds/).
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict
from typing import Any

from ..model import Diagnosis, Probes, TensorSummary
from .extract import human_size
from .kinds import FALLBACK, Live, hook, recognised_live
from .probe_values import MAX_LISTED, describe, nonfinite_tensors, numel, probes_value


def gather(kind: str, message: str, probes: Probes, known_evidence: list[str] | tuple[str, ...] = ()) -> Live:
    """Everything `probes` add to a diagnosis of `kind` whose exception says `message`;
    `known_evidence` is not repeated."""
    live = Live(kind, message, probes)
    if probes.worker is not None:
        live.evidence.append(f"Failed in DataLoader worker process {probes.worker}.")
    if probes.rank is not None:
        live.evidence.append(f"Failed on rank {probes.rank}.")
    for t in nonfinite_tensors(probes)[:MAX_LISTED]:
        counts = [f"{n} {name}" for n, name in ((t.nan_count, "NaN"), (t.inf_count, "inf")) if n]
        live.evidence.append(f"Tensor {describe(t)} holds {' and '.join(counts)} (of {numel(t)} values).")
    _environment(probes, live)
    kinds = [kind]
    if kind == FALLBACK:
        from .signatures import load_signatures

        claimed = recognised_live(probes)
        if claimed:  # the probes name a kind the text did not: its evidence first
            kinds.insert(0, next(s.kind for s in load_signatures() if s.id == claimed))
    for name in kinds:
        enrich_live = hook(name, "enrich_live")
        if enrich_live is not None:
            enrich_live(live)
    if probes.worker is not None:
        live.describe_frame()
    live.details["probes"] = probes_json(probes)
    if probes.worker is not None:
        live.details["worker"] = probes.worker
    known = set(known_evidence)
    live.evidence = [e for e in dict.fromkeys(live.evidence) if e not in known]
    return live


def with_notes(root_cause: str, notes: list[str]) -> str:
    if not notes:
        return root_cause
    return (root_cause.rstrip() + " " if root_cause else "") + "Live: " + " ".join(notes)


def enrich(diagnosis: Diagnosis, probes: Probes | None) -> Diagnosis:
    """`diagnosis` with what `probes` add (for a Diagnosis built without them)."""
    if probes is None:
        return diagnosis
    message = diagnosis.exception.message if diagnosis.exception else ""
    live = gather(diagnosis.kind, message, probes, diagnosis.evidence)
    return dataclasses.replace(
        diagnosis,
        root_cause=with_notes(diagnosis.root_cause, live.notes),
        evidence=tuple(diagnosis.evidence) + tuple(live.evidence),
        rank=diagnosis.rank if probes.rank is None else probes.rank,
        details={**(diagnosis.details or {}), **live.details},
    )


def _environment(probes: Probes, live: Live) -> None:
    env = probes_value(probes, "env", dict) or {}
    memory = probes.get("cuda_memory")
    stats = memory.value if memory is not None and memory.ok else env.get("cuda_memory")
    if isinstance(stats, dict):
        parts = [f"{k} {human_size(v)}" for k, v in stats.items() if isinstance(v, (int, float))]
        if parts:
            live.evidence.append("live CUDA memory: " + ", ".join(parts))
            live.details["live_cuda_memory"] = dict(stats)
    if env:
        live.details["live_env"] = dict(env)


def probes_json(probes: Probes) -> dict[str, Any]:
    """What the probes read, JSON-ready (the `traceback` text is left out: it is the input)."""
    out: dict[str, Any] = {
        "frame": None if probes.frame is None else probes.frame.to_json(),
        "rank": probes.rank,
        "worker": probes.worker,
        "tensors": [_tensor_json(t) for t in probes.tensors],
    }
    for result in probes.results:
        if result.name in ("tensors", "traceback"):
            if not result.ok:
                out.setdefault("errors", {})[result.name] = result.error
            continue
        if result.ok:
            out[result.name] = result.value
        else:
            out.setdefault("errors", {})[result.name] = result.error
    return out


def _tensor_json(t: TensorSummary) -> dict[str, Any]:
    data = asdict(t)
    data["shape"] = list(t.shape)
    return data
