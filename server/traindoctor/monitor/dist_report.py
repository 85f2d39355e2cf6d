"""A distributed run as one report: every rank's records merged step by step, findings with `rank`.

A job folder holds `rank-<N>/` (each rank's steps.jsonl, run.json, rank.json, stacks.txt) and,
after a hang, `hang.json`. The single-process detectors run over each rank; the findings of one
kind on several ranks become one finding, on the rank where it began (a NaN on rank 1 reaches
rank 0's gradients through DDP's all-reduce at the same step: rank 1's loss is the source). The
distributed detectors (hang, desync, straggler, same-data: dist_detectors.py) read the whole job.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from . import dist_detectors  # noqa: F401  (registers the distributed detectors)
from .findings import StepFinding, detect
from .series import RunData, run_from_dir

DISTRIBUTED_DETECTORS = ("hang", "desync", "straggler", "same-data")


def is_job_dir(run_dir: str | Path) -> bool:
    return any(Path(run_dir).glob("rank-*/"))


def job_from_dir(job_dir: str | Path) -> RunData:
    """The job as one RunData: `records` merged by step ({"step", "ranks": {rank: record}}),
    `meta["distributed"]` with each rank's RunData and rank.json, and the hang report if any."""
    folder = Path(job_dir)
    ranks: dict[int, RunData] = {}
    infos: dict[int, dict[str, Any]] = {}
    for rank_dir in folder.glob("rank-*"):
        try:
            rank = int(rank_dir.name[5:])
        except ValueError:
            continue
        ranks[rank] = run_from_dir(rank_dir)
        infos[rank] = _read_json(rank_dir / "rank.json")
    merged: dict[int, dict[str, Any]] = {}
    for rank in sorted(ranks):
        for record in ranks[rank].records:
            merged.setdefault(record["step"], {"step": record["step"], "ranks": {}})["ranks"][rank] = record
    beats = [_heartbeat_step(folder / f"rank-{rank}") for rank in ranks]
    world = max([i.get("world_size") or 0 for i in infos.values()] + [len(ranks)])
    meta: dict[str, Any] = {"distributed": {"world_size": world, "ranks": dict(sorted(ranks.items())),
                                            "info": infos, "hang": _read_json(folder / "hang.json") or None,
                                            # steps the ranks took (a hung rank's last records never reach the disk)
                                            "steps": max([len(merged)] + beats)}}
    errors = {r: data.meta["monitor_error"] for r, data in ranks.items() if data.meta.get("monitor_error")}
    if errors:
        rank, error = min(errors.items())
        meta["monitor_error"] = f"rank {rank}: {error}"
    if not any(data.meta for data in ranks.values()) and not infos:
        meta = {}  # no rank started its monitor: `watch` says so
    return RunData("watch", {}, [merged[s] for s in sorted(merged)], meta)


def job_summary(job: RunData) -> dict[str, Any]:
    """What `--format json` says of the job besides its findings: each rank's steps and exit."""
    dist = job.meta.get("distributed") or {}
    ranks = {}
    for rank, data in (dist.get("ranks") or {}).items():
        info = (dist.get("info") or {}).get(rank) or {}
        ranks[str(rank)] = {"steps": len(data.records), "exit_code": data.meta.get("exit_code"),
                            "pid": info.get("pid"), "host": info.get("host"), "error": data.meta.get("error")}
    launchers = [i.get("launcher") for i in (dist.get("info") or {}).values() if i.get("launcher")]
    return {"launcher": launchers[0] if launchers else "torchrun", "world_size": dist.get("world_size"),
            "steps": dist.get("steps"),
            "hang": bool(dist.get("hang")), "ranks": ranks}


def detect_job(job: RunData, source: str) -> list[StepFinding]:
    """Per-rank findings (one per kind, on the rank where it began) and the job's own."""
    dist = job.meta.get("distributed") or {}
    by_kind: dict[str, list[StepFinding]] = {}
    for rank, data in (dist.get("ranks") or {}).items():
        for finding in detect(data, source):
            finding = StepFinding(dataclasses.replace(finding.diagnosis, rank=rank), finding.step)
            by_kind.setdefault(finding.diagnosis.kind, []).append(finding)
    out = [_merge(findings) for findings in by_kind.values()]
    for finding in detect(job, source, only=DISTRIBUTED_DETECTORS):
        rank = finding.diagnosis.details.get("rank")
        out.append(StepFinding(dataclasses.replace(finding.diagnosis, rank=rank), finding.step))
    out.sort(key=lambda f: (f.step is None, f.step or 0))
    return out


def _merge(findings: list[StepFinding]) -> StepFinding:
    """One finding of a kind: the earliest; at the same step, the rank whose loss showed it."""
    if len(findings) == 1:
        return findings[0]

    def origin(finding: StepFinding) -> tuple[Any, ...]:
        series = str((finding.diagnosis.details.get("facts") or {}).get("series") or "")
        return (finding.step is None, finding.step or 0, not series.startswith("loss"), finding.diagnosis.rank)

    findings = sorted(findings, key=origin)
    first, others = findings[0], findings[1:]
    seen = ", ".join(f"rank {f.diagnosis.rank} at step {f.step}" for f in others)
    evidence = (*first.diagnosis.evidence, f"rank {first.diagnosis.rank} shows it first; also on {seen}")
    details = {**first.diagnosis.details, "also_on_ranks": [{"rank": f.diagnosis.rank, "step": f.step}
                                                           for f in others]}
    return StepFinding(dataclasses.replace(first.diagnosis, evidence=evidence, details=details), first.step)


def _heartbeat_step(rank_dir: Path) -> int:
    try:
        return int((rank_dir / "heartbeat").read_text(encoding="utf-8").split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
