"""Run a torchrun job with the step monitor on every rank, watch it for a hang, stop it cleanly.

`torchrun [opts] train.py ARGS` (or `python -m torch.distributed.run ...`) becomes
`python -m torch.distributed.run [opts] <monitor>/bootstrap.py train.py ARGS`: torchrun starts
every rank through the bootstrap, which reads the rank from the environment torchrun sets
(RANK, LOCAL_RANK, WORLD_SIZE) and writes its records under `<run>/rank-<RANK>/`.

While the job runs, this process reads each rank's heartbeat (its last step). When no rank has
stepped for the hang threshold (rules/monitors/hang.yaml), it asks every rank for its Python
stacks (`faulthandler` on a signal, registered by rank_hooks.py), writes them to `hang.json`,
and stops the job: SIGTERM to torchrun (which stops its workers), then SIGKILL to whatever is
left of it (the workers run in sessions of their own; we are their subreaper).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from ..live.launcher import LaunchError, _become_subreaper, _die_with, descendants, exit_code
from .launchers import TorchrunCommand
from .rules import load_monitor_rules
from .runner import CONFIG_VARIABLE, MonitoredRun, supervise

_POLL_S = 0.25
_STOP_GRACE_S = 10.0
_RANK_GRACE_S = 3.0  # a running rank's time to write its records after SIGTERM


def distributed_settings() -> dict[str, Any]:
    """What each rank's monitor needs from rules/monitors (desync: every K steps; hang: the signal)."""
    rules = load_monitor_rules()
    return {"checksum_every": int(rules["desync"].params.get("checksum_every", 10)),
            "stack_signal": str(rules["hang"].params.get("stack_signal", "SIGUSR2")),
            "hang": dict(rules["hang"].params)}  # for the parent of mp.spawn, which watches its ranks


def run_distributed(command: TorchrunCommand, config: dict[str, Any], timeout: float | None = None,
                    hang_after: float | None = None) -> MonitoredRun:
    job_dir = Path(config["run_dir"])
    launcher = "accelerate launch" if command.launcher.startswith("accelerate") else "torchrun"
    config = {**config, "distributed": {**distributed_settings(), "launcher": launcher}}
    env = dict(os.environ)
    env[CONFIG_VARIABLE] = json.dumps(config)
    _become_subreaper()  # the workers run in sessions of their own: orphans come back to us
    parent = os.getpid()
    try:
        # Its own process group: Ctrl-C reaches us alone, and we stop the job in order.
        child = subprocess.Popen(command.argv(), env=env, process_group=0, preexec_fn=lambda: _die_with(parent))
    except OSError as exc:
        raise LaunchError(f"cannot start `{command.python}`: {exc.strerror or exc}") from None
    watch = HangWatch(job_dir, load_monitor_rules()["hang"].params, hang_after)

    def stop_if_hung() -> int | None:
        hang = watch.poll()
        if hang is None:
            return None
        stacks = confirmed_stacks(job_dir, watch)
        if stacks is None:  # moving, or waiting in nothing that blocks: not a hang (yet)
            watch.snooze()
            return None
        hang["stacks"] = stacks
        _write_json(job_dir / "hang.json", hang)
        returncode = stop_job(child, job_dir, hung=True)
        hang["stopped"] = True
        _write_json(job_dir / "hang.json", hang)
        return returncode

    returncode, timed_out = supervise(child, lambda job: stop_job(job, job_dir), timeout, stop_if_hung, _POLL_S)
    return MonitoredRun(job_dir, exit_code(returncode), timed_out)


class HangWatch:
    """Reads the ranks' step records as they are written; says when no rank has stepped for too long."""

    def __init__(self, job_dir: Path, params: Any, hang_after: float | None) -> None:
        self.job_dir = job_dir
        self.params = params
        self.hang_after = hang_after
        self.signal = getattr(signal, str(params.get("stack_signal", "SIGUSR2")), signal.SIGUSR2)
        self.started = time.monotonic()
        self.steps: dict[str, int] = {}
        self.step_times: list[float] = []
        self.last_progress = self.started

    def threshold(self) -> float:
        if not self.steps:  # start-up (imports, loading, rendezvous) is not measured against steps
            return float(self.params.get("first_step_seconds", 600))
        if self.hang_after is not None:
            return self.hang_after
        if not self.step_times:
            return float(self.params.get("min_seconds", 60))
        median = statistics.median(self.step_times[-200:])
        return max(float(self.params.get("factor", 10)) * median, float(self.params.get("min_seconds", 60)))

    def snooze(self) -> None:
        """The stacks showed no hang: the idle time counts again from now."""
        self.last_progress = time.monotonic()

    def poll(self) -> dict[str, Any] | None:
        now = time.monotonic()
        for folder in sorted(self.job_dir.glob("rank-*")):
            self._read(folder, now)
        idle = now - self.last_progress
        threshold = self.threshold()
        if idle <= threshold:
            return None
        return {"idle_s": round(idle, 3), "threshold_s": round(threshold, 3), "hang_after": self.hang_after,
                "median_step_s": statistics.median(self.step_times) if self.step_times else None,
                "last_step": dict(self.steps), "detected_at": time.time()}

    def _read(self, folder: Path, now: float) -> None:
        """The rank's heartbeat: `STEP STEP_TIME`, rewritten in place at every step."""
        try:
            fields = (folder / "heartbeat").read_text(encoding="utf-8").split()
            step = int(fields[0])
        except (OSError, ValueError, IndexError):
            return
        if step > self.steps.get(folder.name, 0):
            self.steps[folder.name] = step
            self.last_progress = now
            try:
                self.step_times.append(float(fields[1]))
            except (ValueError, IndexError):
                pass


def rank_processes(job_dir: Path) -> dict[int, int]:
    """rank -> pid, from each rank's rank.json."""
    out: dict[int, int] = {}
    for path in job_dir.glob("rank-*/rank.json"):
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
            out[int(info["rank"] if info.get("rank") is not None else path.parent.name[5:])] = int(info["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


def confirmed_stacks(job_dir: Path, watch: "HangWatch") -> dict[str, str] | None:
    """Every rank's stacks when they show a hang, else None. No step for a while is not enough (a
    long validation or checkpoint takes no optimizer step): two dumps `confirm_seconds` apart must
    be identical on every rank, with at least one rank blocked (in a collective, in backward's
    all-reduce, or in a device sync)."""
    wait_s = float(watch.params.get("stack_wait_seconds", 3))
    first = collect_stacks(job_dir, watch.signal, wait_s)
    time.sleep(float(watch.params.get("confirm_seconds", 5)))
    second = collect_stacks(job_dir, watch.signal, wait_s)
    return second if stacks_show_hang(first, second) else None


def stacks_show_hang(first: dict[str, str], second: dict[str, str]) -> bool:
    from .dist_detectors import is_blocked

    return bool(second) and first == second and any(is_blocked(text) for text in second.values())


def collect_stacks(job_dir: Path, signum: int, wait_s: float) -> dict[str, str]:
    """Every rank's Python stacks, dumped by faulthandler into its stacks.txt on `signum` (each dump
    is appended: this one is what follows the file's size before the signal)."""
    processes = rank_processes(job_dir)
    files = {rank: job_dir / f"rank-{rank}" / "stacks.txt" for rank in processes}
    start = {rank: _size(path) for rank, path in files.items()}
    for pid in processes.values():
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + wait_s
    sizes: dict[int, int] = {}
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = {rank: _size(path) for rank, path in files.items()}
        if all(now[rank] > start[rank] for rank in now) and now == sizes:  # all wrote, nothing more coming
            break
        sizes = now
    out = {}
    for rank, path in sorted(files.items()):
        try:
            with open(path, "rb") as handle:
                handle.seek(start[rank])
                out[str(rank)] = handle.read().decode("utf-8", "replace")
        except OSError:
            out[str(rank)] = ""
    return out


def stop_job(child: subprocess.Popen[bytes], job_dir: Path, hung: bool = False) -> int:
    """SIGTERM to the ranks (each writes its last records), SIGKILL to those still there after 3 s
    (`hung`: at once: a rank blocked in a collective never runs a Python signal handler), SIGTERM to
    torchrun, then SIGKILL to every process left of the job."""
    ranks = [pid for pid in rank_processes(job_dir).values() if _is_child_of_job(pid, job_dir)]
    if not hung:  # running ranks write their last records on SIGTERM (rank_hooks.py) and exit
        _signal_all(ranks, signal.SIGTERM)
        deadline = time.monotonic() + _RANK_GRACE_S
        while time.monotonic() < deadline and any(_alive(pid) for pid in ranks):
            time.sleep(0.05)
    _signal_all(ranks, signal.SIGKILL)
    if child.poll() is None:
        try:
            child.send_signal(signal.SIGTERM)
            child.wait(_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    ours = set(descendants(os.getpid()))
    for pid in ours | set(rank_processes(job_dir).values()):
        if pid in ours or _is_child_of_job(pid, job_dir):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    returncode = child.wait()
    _reap()
    return returncode


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for torchrun to collect it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] != b"Z"


def _is_child_of_job(pid: int, job_dir: Path) -> bool:
    """A rank's pid from rank.json: still one of ours only if its environment names this job."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return str(job_dir).encode() in handle.read()
    except OSError:
        return False


def _reap() -> None:
    for _ in range(100):
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            if not descendants(os.getpid()):
                return
            time.sleep(0.02)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _write_json(path: Path, data: Any) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data, default=str), encoding="utf-8")
    os.replace(temporary, path)
