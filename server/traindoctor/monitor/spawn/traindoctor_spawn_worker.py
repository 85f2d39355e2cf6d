"""The step monitor in each process of `torch.multiprocessing.spawn` (and `start_processes`).

This folder holds only this module and is appended to the watched program's `sys.path`, which the
spawned processes inherit: they can unpickle `MonitoredWorker` by name, and no other module of
traindoctor becomes importable (nothing of the user's is shadowed). Standard library and torch only.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

_BOOTSTRAP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bootstrap.py")


class MonitoredWorker:
    """`fn(i, *args)` in spawned process `i`, as rank `i` of the job in `config["run_dir"]`."""

    def __init__(self, fn: Any, config: dict[str, Any], nprocs: int) -> None:
        self.fn = fn
        self.config = config
        self.nprocs = nprocs

    def __call__(self, index: int, *args: Any) -> Any:
        spec = importlib.util.spec_from_file_location("traindoctor_monitor_bootstrap", _BOOTSTRAP)
        bootstrap = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(bootstrap)  # type: ignore[union-attr]
        hooks, rank_hooks = bootstrap._load_hooks(), bootstrap._load_hooks(bootstrap.monitor_file("rank_hooks"))
        settings = {**(self.config.get("distributed") or {}), "rank": index, "world_size": self.nprocs,
                    "launcher": "mp.spawn"}
        config = {**self.config, "distributed": settings,
                  "run_dir": os.path.join(self.config["run_dir"], f"rank-{index}")}
        monitor = hooks.Monitor(config)
        monitor.install()
        rank_hooks.install(monitor, config)
        exit_code: Any = 0
        error = None
        try:
            return self.fn(index, *args)
        except hooks.StopRun:
            return None
        except SystemExit as exc:
            exit_code = exc.code
            raise
        except BaseException as exc:
            exit_code, error = 1, f"{type(exc).__name__}: {str(exc)[:500]}"
            raise
        finally:
            monitor.close(exit_code, error)
            sys.stdout.flush()
