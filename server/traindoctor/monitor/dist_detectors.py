"""The distributed detectors: hang, desync, straggler, same-data. They read a whole job (dist_report.job_from_dir)
and return nothing for a single-process run. Words and thresholds: rules/monitors/{hang,desync,straggler,same-data}.yaml.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..model import Frame
from .detectors import Hit, Lint, detector, num, percent, site_frame
from .series import RunData

_MONITOR_DIR = Path(__file__).resolve().parent.as_posix()
_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-fA-F]+)")
_FRAME = re.compile(r'^\s+File "(.*)", line (\d+) in (.*)$')


@dataclass(frozen=True)
class StackFrame:
    path: str
    line: int
    function: str


def parse_faulthandler(text: str) -> list[list[StackFrame]]:
    """The threads of a faulthandler dump, each a list of frames, innermost first."""
    threads: list[list[StackFrame]] = []
    for line in text.splitlines():
        if _THREAD.match(line):
            threads.append([])
            continue
        match = _FRAME.match(line)
        if match and threads:
            threads[-1].append(StackFrame(match.group(1), int(match.group(2)), match.group(3)))
    return threads


def main_thread(threads: list[list[StackFrame]]) -> list[StackFrame]:
    """The thread that runs the training script: the one started in the monitor's bootstrap."""
    for frames in threads:
        if frames and frames[-1].path.endswith("bootstrap.py"):
            return frames
    return next((frames for frames in threads if frames), [])


def is_user_path(path: str) -> bool:
    posix = path.replace("\\", "/")
    return not (path.startswith("<") or posix.startswith(_MONITOR_DIR) or "/site-packages/" in posix
                or "/dist-packages/" in posix or re.search(r"/lib/python3\.\d+/", posix) is not None)


@dataclass(frozen=True)
class RankWait:
    rank: int
    collective: str | None  # all_reduce, barrier, "DDP's gradient all-reduce (in backward())"...
    user: StackFrame | None  # the innermost frame of the user's code
    answered: bool

    def where(self) -> str:
        if self.user is None:
            return "no line of the training code" if self.answered else "no stack (it did not answer)"
        return f"{Path(self.user.path).name}:{self.user.line}"


def rank_wait(rank: int, stacks: str) -> RankWait:
    frames = main_thread(parse_faulthandler(stacks))
    user = next((f for f in frames if is_user_path(f.path)), None)
    collective = None
    c10d = [f for f in frames if f.path.replace("\\", "/").endswith("torch/distributed/distributed_c10d.py")]
    if c10d:
        collective = c10d[-1].function  # the outermost: the function the user called
    elif any("/torch/autograd/" in f.path.replace("\\", "/") for f in frames):
        collective = "backward() (DDP's gradient all-reduce runs inside it)"
    elif any("/torch/distributed/" in f.path.replace("\\", "/") for f in frames):
        inner = [f for f in frames if "/torch/distributed/" in f.path.replace("\\", "/")
                 and not f.path.endswith("c10d_logger.py")]  # its `wrapper` names nothing
        collective = inner[-1].function if inner else None
    return RankWait(rank, collective, user, bool(frames))


def is_blocked(stacks: str) -> bool:
    """The rank's main thread waits in something that does not return by itself: a collective
    (c10d, or backward with DDP's all-reduce) or a device sync in the monitor's read of the step."""
    frames = main_thread(parse_faulthandler(stacks))
    if not frames:
        return False
    return rank_wait(0, stacks).collective is not None or any(
        f.path == "<frozen traindoctor.monitor.hooks>" for f in frames)


def _code_at(frame: StackFrame | None) -> str | None:
    if frame is None:
        return None
    try:
        with open(frame.path, encoding="utf-8", errors="replace") as handle:
            for number, text in enumerate(handle, 1):
                if number == frame.line:
                    return text.strip()
    except OSError:
        return None
    return None


def _frame(frame: StackFrame | None) -> Frame | None:
    if frame is None:
        return None
    return Frame(frame.path, frame.line, frame.function, _code_at(frame), True)


def _ranks(ranks: list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))


def _elsewhere(wait: RankWait) -> str:
    if not wait.answered:
        return f"rank {wait.rank} did not answer: it has exited, or runs no Python any more"
    if wait.collective:
        return f"rank {wait.rank} waits in `{wait.collective}` at {wait.where()}"
    return f"rank {wait.rank} is at {wait.where()}, not in a collective"


@detector("hang")
def hang(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    dist = run.meta.get("distributed") or {}
    report = dist.get("hang")
    if not report:
        return []
    world = list(range(int(dist.get("world_size") or 0))) or sorted(int(r) for r in report.get("stacks") or {})
    stacks = {int(r): text for r, text in (report.get("stacks") or {}).items()}
    waits = [rank_wait(rank, stacks.get(rank, "")) for rank in world]
    groups: dict[tuple[str | None, str], list[RankWait]] = {}
    for wait in waits:
        groups.setdefault((wait.collective, wait.where()), []).append(wait)
    # The collective most ranks wait in (ties: rank 0's); the ranks not in it are missing from it.
    key, members = max(groups.items(), key=lambda item: (item[0][0] is not None, len(item[1]),
                                                         -min(w.rank for w in item[1])))
    collective, where = key
    missing = [w for w in waits if w not in members]
    lines = [f"rank {w.rank}: " + (f"in `{w.collective}` at {w.where()}" if w.collective else
                                   f"not in a collective, at {w.where()}")
             + (f": {_code_at(w.user)}" if _code_at(w.user) else "") for w in waits]
    last = report.get("last_step") or {}
    facts: dict[str, Any] = {
        "idle": num(report.get("idle_s")), "threshold": num(report.get("threshold_s")),
        "median_step": num(report.get("median_step_s")) if report.get("median_step_s") else None,
        "waiting_ranks": _ranks([w.rank for w in members]), "collective": collective, "where": where,
        "stacks": "; ".join(lines),
        "last_steps": ", ".join(f"{name.replace('-', ' ')}: {step}" for name, step in sorted(last.items())) or None,
    }
    if missing:
        facts["missing_ranks"] = _ranks([w.rank for w in missing])
        facts["missing_where"] = "; ".join(_elsewhere(w) for w in missing)
    else:
        facts["same_place"] = True
    location = _frame(members[0].user)
    details = {"rank": missing[0].rank if missing else None,
               "ranks": {str(w.rank): {"collective": w.collective, "where": w.where(), "answered": w.answered,
                                       "line": None if w.user is None else {"path": w.user.path, "line": w.user.line}}
                         for w in waits},
               "idle_s": report.get("idle_s"), "threshold_s": report.get("threshold_s")}
    return [Hit(None, facts, location, details=details)]


@detector("desync")
def desync(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    dist = run.meta.get("distributed") or {}
    ranks: dict[int, RunData] = dist.get("ranks") or {}
    if len(ranks) < 2 or not all("DistributedDataParallel" in (d.meta.get("model") or []) for d in ranks.values()):
        return []  # only DDP promises identical replicas (FSDP shards them, pipelines split them)
    names = next(iter(ranks.values())).meta.get("param_names") or []
    tolerance = float(params.get("tolerance", 1e-6))
    equal_at = None
    for record in run.records:
        sums = {rank: r.get("param_checksum") for rank, r in record["ranks"].items()}
        if len(sums) < len(ranks) or not all(isinstance(s, list) for s in sums.values()):
            continue
        reference_rank = min(sums)
        reference = sums[reference_rank]
        for index, value in enumerate(reference):
            off = [rank for rank, values in sums.items()
                   if index < len(values) and not _close(values[index], value, tolerance)]
            if not off:
                continue
            # With 3+ ranks the odd one out is the one that differs from the most common value.
            counts = {rank: sum(_close(sums[other][index], sums[rank][index], tolerance) for other in sums)
                      for rank in sums}
            majority = max(counts.values())
            odd = [rank for rank in sorted(sums) if counts[rank] < majority] or off
            facts = {"step": record["step"], "parameter": names[index] if index < len(names) else f"param[{index}]",
                     "rank": odd[0], "reference_rank": next(r for r in sorted(sums) if r not in odd),
                     "value": num(sums[odd[0]][index]),
                     "reference_value": num(sums[next(r for r in sorted(sums) if r not in odd)][index]),
                     "equal_at": equal_at, "every": params.get("checksum_every"),
                     "differing": sum(1 for i in range(len(reference)) if any(
                         i < len(v) and not _close(v[i], reference[i], tolerance) for v in sums.values()))}
            return [Hit(record["step"], facts, None, details={"rank": odd[0], "parameter_index": index})]
        equal_at = record["step"]
    return []


def _close(a: Any, b: Any, tolerance: float) -> bool:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return a == b
    if math.isnan(a) and math.isnan(b):
        return True
    return abs(a - b) <= tolerance * max(abs(a), abs(b), 1e-12)


def _medians(data: RunData, name: str, skip: int) -> float | None:
    values = [r[name] for r in data.records[skip:] if isinstance(r.get(name), (int, float))]
    return statistics.median(values) if values else None


@detector("straggler")
def straggler(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    dist = run.meta.get("distributed") or {}
    ranks: dict[int, RunData] = dist.get("ranks") or {}
    skip = int(params.get("skip_steps", 2))
    if len(ranks) < 2 or any(len(d.records) < skip + int(params.get("min_steps", 5)) for d in ranks.values()):
        return []
    step_times = [m for m in (_medians(d, "step_time", skip) for d in ranks.values()) if m is not None]
    if not step_times:
        return []
    step_time = statistics.median(step_times)
    ratio, min_gap, min_share = (float(params.get("ratio", 2.0)), float(params.get("min_gap_s", 0.005)),
                                 float(params.get("min_share", 0.1)))
    worst = None
    for name, what in (("data_time", "data"), ("forward_time", "compute")):
        medians = {rank: _medians(d, name, skip) for rank, d in ranks.items()}
        if any(m is None for m in medians.values()):
            continue
        for rank, value in medians.items():
            others = statistics.median([m for r, m in medians.items() if r != rank])
            gap = value - others
            if gap >= max(min_gap, (ratio - 1) * others, min_share * step_time):
                if worst is None or gap > worst[0]:
                    worst = (gap, rank, what, value, others)
        if worst is not None:
            break  # a slow loader explains the step before the compute does
    if worst is None:
        return []
    gap, rank, what, value, others = worst
    facts = {"rank": rank, "data": what == "data", "compute": what == "compute", "value": num(value),
             "others": num(others), "gap": num(gap), "step_time": num(step_time),
             "share": percent(min(gap / step_time, 1.0)) if step_time > 0 else None, "ranks": len(ranks)}
    loaders = ranks[rank].meta.get("loaders") or []
    location = site_frame(loaders[0].get("site")) if what == "data" and loaders else \
        site_frame(ranks[rank].meta.get("backward_site"))
    return [Hit(None, facts, location, details={"rank": rank, "kind": what})]


@detector("same-data")
def same_data(run: RunData, params: Mapping[str, Any], lint: Lint) -> list[Hit]:
    dist = run.meta.get("distributed") or {}
    ranks: dict[int, RunData] = dist.get("ranks") or {}
    infos = dist.get("info") or {}
    batches = [(infos.get(rank) or {}).get("first_batch") for rank in ranks]
    if len(ranks) < 2 or not all(isinstance(b, dict) and b.get("shapes") for b in batches):
        return []
    if not all("DistributedDataParallel" in (d.meta.get("model") or []) for d in ranks.values()):
        return []
    if len({(_shapes_text(b["shapes"]), b.get("hash")) for b in batches}) != 1:
        return []
    first = min(ranks)
    loaders = ranks[first].meta.get("loaders") or []
    location = site_frame(loaders[0].get("site")) if loaders else None
    facts = {"ranks": len(ranks), "shapes": _shapes_text(batches[0]["shapes"]), "hash": batches[0].get("hash")}
    return [Hit(1, facts, location, details={"rank": None})]


def _shapes_text(shapes: Any) -> str:
    return ", ".join("x".join(map(str, shape)) or "scalar" for shape in shapes)
