"""The step monitor's additions on one rank of a distributed run (torchrun, `watch -- torchrun ...`).

Loaded by `bootstrap.py` next to hooks.py, inside the user's process, so it imports only torch
and the standard library. On each rank it:

- writes `rank.json` at start (rank, world size, pid): the supervisor finds the rank's process;
- overwrites `heartbeat` at every step with the step's number and time (one `pwrite`): the step
  records reach the disk in batches, too late to tell a hang from a fast run;
- registers `faulthandler` on a signal, so the supervisor can read every thread's Python stack
  when the job hangs (a C-level handler: it answers even while the rank waits inside a collective);
- adds to the step records: a checksum of every parameter every K steps (replicas that DDP keeps
  identical must have equal ones), and the forward time (from the batch to `backward()`): the
  all-reduce inside `backward()` makes every rank's step as slow as the slowest, so the step time
  cannot tell which rank computes slowly, but the forward, which synchronises nothing, can;
- a hash and the shapes of the first batch, in `rank.json`.
"""

from __future__ import annotations

import faulthandler
import json
import os
import re
import signal
import socket
import sys
import threading
import time
import zlib
from typing import Any

import torch
from torch.utils.data import dataloader as _dl

_BATCH_HASH_BYTES = 1 << 20  # the first batch's hash reads at most this much of each tensor


def rank_dir(run_dir: str) -> str:
    """This rank's record folder inside the job's."""
    return os.path.join(run_dir, f"rank-{os.environ.get('RANK', '0')}")


def install(monitor: Any, config: dict[str, Any]) -> "RankMonitor":
    rank = RankMonitor(monitor, config.get("distributed") or {})
    rank.install()
    return rank


class RankMonitor:
    def __init__(self, monitor: Any, settings: dict[str, Any]) -> None:
        self.monitor = monitor
        self.every = max(1, int(settings.get("checksum_every", 10)))
        self.signal = getattr(signal, str(settings.get("stack_signal", "SIGUSR2")), signal.SIGUSR2)
        self.batch_at: float | None = None  # when the last batch came out of a loader
        self.backward_at: float | None = None  # the first backward() after it
        self.info: dict[str, Any] = {
            "rank": settings.get("rank", _int_env("RANK")), "local_rank": _int_env("LOCAL_RANK"),
            "world_size": settings.get("world_size", _int_env("WORLD_SIZE")),
            "launcher": settings.get("launcher", "torchrun"),
            "pid": os.getpid(), "host": socket.gethostname(), "started": time.time(),
            "stack_signal": self.signal.name,
        }
        self.stack_file: Any = None
        self.heartbeat = -1

    def install(self) -> None:
        _die_with_launcher()
        self._close_on_sigterm()
        run_dir = self.monitor.run_dir
        self.stack_file = open(os.path.join(run_dir, "stacks.txt"), "w", encoding="utf-8")
        faulthandler.register(self.signal, file=self.stack_file, all_threads=True, chain=False)
        self._write_info()
        self.heartbeat = os.open(os.path.join(run_dir, "heartbeat"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        rank = self

        original_take = self.monitor._take_step

        def take_step(optimizer: Any) -> None:
            original_take(optimizer)
            rank._complete(self.monitor.pending)

        self.monitor._take_step = take_step  # read by the pre-step hook at each step
        self.patch()

    def _close_on_sigterm(self) -> None:
        """torchrun (and `watch` at a timeout or a Ctrl-C) stops a rank with SIGTERM, whose default
        kills it before its last records reach the disk: write them, then die of SIGTERM as before.
        (A rank blocked in a collective runs no Python handler: the supervisor kills it.)"""
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return  # the program's own handler (or a launcher's) stays
        monitor = self.monitor

        pid = os.getpid()

        def on_sigterm(signum: int, frame: Any) -> None:
            # A forked DataLoader worker inherits this handler: only the rank itself writes.
            if os.getpid() == pid and monitor.lock.acquire(blocking=False):  # not amid a write of its own
                monitor.lock.release()
                try:
                    monitor.close(128 + signum, "stopped by SIGTERM", remove_hooks=False)
                except Exception:
                    pass
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

        try:
            signal.signal(signal.SIGTERM, on_sigterm)
        except ValueError:  # not the main thread
            pass

    def patch(self) -> None:
        """The wrappers that time the forward (the monitor removes them with its own)."""
        rank = self
        original_next = _dl._BaseDataLoaderIter.__next__

        def next_batch(iterator: Any) -> Any:
            batch = original_next(iterator)
            rank.batch_at = time.perf_counter()
            rank.backward_at = None
            if "first_batch" not in rank.info:
                rank.info["first_batch"] = _describe_batch(batch)
                rank._write_info()
            return batch

        self.monitor._patch(_dl._BaseDataLoaderIter, "__next__", next_batch)

        original_backward = torch.Tensor.backward

        def backward(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            if rank.backward_at is None:
                rank.backward_at = time.perf_counter()
            return original_backward(tensor, *args, **kwargs)

        backward.__wrapped__ = original_backward  # type: ignore[attr-defined]
        self.monitor._patch(torch.Tensor, "backward", backward)

    def _complete(self, record: dict[str, Any] | None) -> None:
        """This step's record: the forward time, and every K steps the parameters' checksums (read
        before the optimizer applies the step: after the all-reduce, replicas are still equal)."""
        if record is None:
            return
        if self.batch_at is not None and self.backward_at is not None and self.backward_at >= self.batch_at:
            record["forward_time"] = self.backward_at - self.batch_at
        self.batch_at = self.backward_at = None
        step = self.monitor.step
        try:
            os.pwrite(self.heartbeat, f"{step} {record.get('step_time', '')}".ljust(48).encode(), 0)
        except OSError:
            pass
        if step == 1 or step % self.every == 0:
            params = [p.detach() for p in self.monitor.params]
            if params:
                with torch.no_grad():
                    norms = torch._foreach_norm(params)
                    record["param_checksum"] = torch.stack(norms).double().tolist()

    def _write_info(self) -> None:
        path = os.path.join(self.monitor.run_dir, "rank.json")
        with open(path + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(self.info, handle, default=str)
        os.replace(path + ".tmp", path)


def install_spawn(monitor: Any) -> None:
    """In a plain `watch`: each process `torch.multiprocessing.spawn` starts is monitored as a rank
    of this run (spawn/traindoctor_spawn_worker.py), its records in `rank-<i>/`."""
    import torch.multiprocessing as mp

    module = sys.modules.get("torch.multiprocessing.spawn")
    original = getattr(module, "start_processes", None)
    if original is None:
        return
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spawn")
    if folder not in sys.path:
        sys.path.append(folder)  # the spawned processes inherit it and find MonitoredWorker

    def start_processes(fn: Any, args: Any = (), nprocs: int = 1, *rest: Any, **kwargs: Any) -> Any:
        from traindoctor_spawn_worker import MonitoredWorker

        settings = monitor.config.get("spawn_settings") or {}
        config = {**monitor.config, "distributed": settings}
        watch = SpawnHangWatch(monitor.run_dir, settings.get("hang") or {})
        watch.start()
        try:
            return original(MonitoredWorker(fn, config, nprocs), args, nprocs, *rest, **kwargs)
        finally:
            if kwargs.get("join", rest[0] if rest else True):
                watch.done.set()

    for owner in (module, mp):
        if getattr(owner, "start_processes", None) is original:
            monitor._patch(owner, "start_processes", start_processes)


class SpawnHangWatch(threading.Thread):
    """Under mp.spawn no supervisor process watches the ranks (torchrun jobs have distributed.py's):
    the parent does, from a daemon thread, the same way. When no rank has stepped for the threshold,
    it asks every rank for its stacks, writes `hang.json` and kills the ranks; spawn's join then
    fails in the parent, which ends the run."""

    def __init__(self, job_dir: str, params: dict[str, Any]) -> None:
        super().__init__(name="traindoctor-hang-watch", daemon=True)
        self.job_dir = job_dir
        self.params = params
        self.done = threading.Event()

    def run(self) -> None:
        last = time.monotonic()
        steps: dict[str, int] = {}
        times: list[float] = []
        while not self.done.wait(0.25):
            now = time.monotonic()
            for name in _rank_folders(self.job_dir):
                try:
                    with open(os.path.join(self.job_dir, name, "heartbeat"), encoding="utf-8") as handle:
                        fields = handle.read().split()
                    step = int(fields[0])
                except (OSError, ValueError, IndexError):
                    continue
                if step > steps.get(name, 0):
                    steps[name], last = step, now
                    try:
                        times.append(float(fields[1]))
                    except (ValueError, IndexError):
                        pass
            threshold = self._threshold(steps, times)
            if now - last > threshold:
                if self._stop_if_hung(now - last, threshold, steps, times):
                    return
                last = time.monotonic()  # moving, or blocked in nothing: not a hang (yet)

    def _threshold(self, steps: dict[str, int], times: list[float]) -> float:
        params = self.params
        if not steps:
            return float(params.get("first_step_seconds", 600))
        if params.get("hang_after") is not None:
            return float(params["hang_after"])
        median = sorted(times)[len(times) // 2] if times else 0.0
        return max(float(params.get("factor", 10)) * median, float(params.get("min_seconds", 60)))

    def _stop_if_hung(self, idle: float, threshold: float, steps: dict[str, int], times: list[float]) -> bool:
        """As distributed.confirmed_stacks: two identical dumps, one rank blocked; then stop the ranks."""
        pids = {}
        for name in _rank_folders(self.job_dir):
            try:
                with open(os.path.join(self.job_dir, name, "rank.json"), encoding="utf-8") as handle:
                    pids[name[5:]] = int(json.load(handle)["pid"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
        first = self._dump(pids)
        time.sleep(float(self.params.get("confirm_seconds", 5)))
        stacks = self._dump(pids)
        if not stacks or stacks != first or not any(_BLOCKED.search(text) for text in stacks.values()):
            return False
        report = {"idle_s": round(idle, 3), "threshold_s": round(threshold, 3),
                  "hang_after": self.params.get("hang_after"),
                  "median_step_s": sorted(times)[len(times) // 2] if times else None, "last_step": steps,
                  "detected_at": time.time(), "stacks": stacks, "stopped": True}
        with open(os.path.join(self.job_dir, "hang.json"), "w", encoding="utf-8") as handle:
            json.dump(report, handle)
        for pid in pids.values():
            _kill(pid, signal.SIGKILL)
        return True

    def _dump(self, pids: dict[str, int]) -> dict[str, str]:
        """Each rank's stacks: what faulthandler appends to its stacks.txt on the signal."""
        signum = getattr(signal, str(self.params.get("stack_signal", "SIGUSR2")), signal.SIGUSR2)
        paths = {rank: os.path.join(self.job_dir, f"rank-{rank}", "stacks.txt") for rank in pids}
        start = {rank: _file_size(path) for rank, path in paths.items()}
        for pid in pids.values():
            _kill(pid, signum)
        deadline, sizes = time.monotonic() + float(self.params.get("stack_wait_seconds", 3)), {}
        while time.monotonic() < deadline:
            time.sleep(0.1)
            now = {rank: _file_size(path) for rank, path in paths.items()}
            if all(now[rank] > start[rank] for rank in now) and now == sizes:
                break
            sizes = now
        out = {}
        for rank, path in paths.items():
            try:
                with open(path, "rb") as handle:
                    handle.seek(start[rank])
                    out[rank] = handle.read().decode("utf-8", "replace")
            except OSError:
                out[rank] = ""
        return out


# A stack that waits in what does not return by itself (dist_detectors.is_blocked, by its file names).
_BLOCKED = re.compile(r'File "[^"]*(torch/distributed/distributed_c10d\.py|torch/autograd/|'
                      r'<frozen traindoctor\.monitor\.hooks>)')


def _file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _rank_folders(job_dir: str) -> list[str]:
    try:
        return sorted(name for name in os.listdir(job_dir) if name.startswith("rank-"))
    except OSError:
        return []


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _die_with_launcher() -> None:
    """torchrun starts each rank in a session of its own and, killed itself (SIGKILL, or with
    `traindoctor watch` that started it), leaves the ranks running: the kernel kills this rank
    when torchrun goes."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        parent = os.getppid()
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # it went before the line above took effect
            os._exit(137)
    except (OSError, AttributeError):
        pass


def _int_env(name: str) -> int | None:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


def _describe_batch(batch: Any) -> dict[str, Any]:
    """Shapes and a hash of the tensors of a batch (nested lists, tuples, dicts)."""
    tensors: list[torch.Tensor] = []

    def walk(value: Any, depth: int = 0) -> None:
        if isinstance(value, torch.Tensor):
            tensors.append(value)
        elif depth < 4 and isinstance(value, (list, tuple)):
            for item in value[:16]:
                walk(item, depth + 1)
        elif depth < 4 and isinstance(value, dict):
            for item in list(value.values())[:16]:
                walk(item, depth + 1)

    walk(batch)
    digest = 0
    for tensor in tensors:
        try:
            data = tensor.detach().reshape(-1)[: _BATCH_HASH_BYTES // max(tensor.element_size(), 1)]
            digest = zlib.crc32(data.cpu().contiguous().view(torch.uint8).numpy().tobytes(), digest)
        except Exception:  # a tensor numpy cannot view (bfloat16 on old numpy, a sparse one)
            digest = zlib.crc32(repr(tuple(tensor.shape)).encode(), digest)
    return {"shapes": [list(t.shape) for t in tensors], "hash": digest}
