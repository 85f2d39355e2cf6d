"""Debug launches with autograd anomaly detection, started by the editor: the folders of those runs.

The editor relaunches a debug configuration with the environment `create` answers (the
sitecustomize folder of live/anomaly.py first on PYTHONPATH, and its TRAINDOCTOR_ANOMALY_*
variables), then sends that folder and the debuggee's pid with the live stop, and the server
reads the forward trace anomaly mode recorded there. Only folders this server made are read
or removed: a client cannot point the server at any other path. The server starts no process
here (the editor launches the debuggee, and never in an untrusted workspace).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Mapping, Sequence
from typing import Any


class AnomalyRunError(ValueError):
    """A launch that anomaly mode cannot work in (the message says why)."""


class AnomalyRuns:
    def __init__(self) -> None:
        self._folders: set[str] = set()
        self._lock = threading.Lock()

    def create(self, launch_env: Mapping[str, Any] | None, python_args: Sequence[Any] | None,
               check_nan: bool) -> dict[str, Any]:
        """A fresh run folder; answers {directory, env}: the variables to merge into the launch's env.
        `launch_env`: the configuration's own env (its PYTHONPATH comes before the server's)."""
        from ..live import anomaly  # the live back end loads on first use (see commands.py)

        ignored = sorted(set(str(a) for a in python_args or ()) & set(anomaly.IGNORES_SITE))
        if ignored:
            raise AnomalyRunError(f"anomaly detection needs the interpreter to load sitecustomize from PYTHONPATH; "
                                  f"drop {', '.join(ignored)} from pythonArgs")
        base = dict(os.environ)
        base.update({str(k): str(v) for k, v in (launch_env or {}).items() if v is not None})
        directory = tempfile.mkdtemp(prefix="traindoctor-anomaly-")
        try:
            env = anomaly.setup(directory, base, check_nan)
        except OSError:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        with self._lock:
            self._folders.add(directory)
        changed = {key: value for key, value in env.items() if base.get(key) != value}
        return {"directory": directory, "env": changed}

    def forward_trace(self, directory: Any, pid: Any) -> str:
        """What anomaly mode recorded in process `pid` of that run ("" for a folder not made here)."""
        if not self._owns(directory):
            return ""
        from ..live import anomaly

        return anomaly.forward_trace(directory, pid if isinstance(pid, int) and not isinstance(pid, bool) else None)

    def release(self, directory: Any) -> bool:
        """The run ended: remove its folder."""
        if not self._owns(directory):
            return False
        with self._lock:
            self._folders.discard(directory)
        shutil.rmtree(directory, ignore_errors=True)
        return True

    def close(self) -> None:
        with self._lock:
            folders, self._folders = list(self._folders), set()
        for directory in folders:
            shutil.rmtree(directory, ignore_errors=True)

    def _owns(self, directory: Any) -> bool:
        with self._lock:
            return isinstance(directory, str) and directory in self._folders
