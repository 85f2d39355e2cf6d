"""Run the user's program unchanged with the step monitor installed.

    python bootstrap.py train.py ARGS        (as `python train.py ARGS`)
    python bootstrap.py -m package ARGS      (as `python -m package ARGS`)
    torchrun [opts] bootstrap.py train.py    (every rank: `distributed` in the settings, rank_hooks.py)

The monitor's settings come as JSON in the TRAINDOCTOR_MONITOR environment
variable (written by `traindoctor watch|overfit|repro|budget`). Run as a file, not as
`-m traindoctor...`, so the user's interpreter needs torch but not traindoctor;
the collector is loaded by path: hooks.py next to this file, or the file named by
the settings' "collector" (budget's), which exposes the same `Monitor` and `StopRun`.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import types

CONFIG_VARIABLE = "TRAINDOCTOR_MONITOR"


def monitor_file(name: str) -> str:
    """A module of the monitor next to this file (hooks, rank_hooks), by its stem."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")


def _load_hooks(path: str | None = None):
    """hooks.py (or `path`), compiled under a `<frozen ...>` file name: debuggers (debugpy's justMyCode) and
    traceback readers (traindoctor's own) then treat the monitor's frames as library code, so a
    stop at a NaN shows the user's `optimizer.step()` line, not the hook that raised."""
    path = path or monitor_file("hooks")
    package = os.path.basename(os.path.dirname(path))
    stem = os.path.splitext(os.path.basename(path))[0]
    with open(path, encoding="utf-8") as handle:
        # Like the standard library's `<frozen runpy>`: source held in memory, not the user's code.
        code = compile(handle.read(), f"<frozen traindoctor.{package}.{stem}>", "exec")
    module = types.ModuleType(f"traindoctor_{package}_{stem}")
    module.__file__ = path
    sys.modules[module.__name__] = module
    exec(code, module.__dict__)
    return module


def _hide_internal_frames() -> None:
    """The traceback the script prints when it dies shows its frames, not this file's, runpy's or
    the debugger's, and says how many it hid (internal_frames.py, next to the monitor's folder)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "internal_frames.py")
    try:
        _load_hooks(path).install_excepthook()
    except (OSError, SyntaxError):  # without it, the traceback is printed as Python prints it
        pass


def main() -> None:
    _hide_internal_frames()
    args = sys.argv[1:]
    if not args:
        sys.exit("usage: bootstrap.py SCRIPT ARGS | -m MODULE ARGS")
    config = json.loads(os.environ.pop(CONFIG_VARIABLE, "{}") or "{}")
    config.setdefault("run_dir", os.path.join(".traindoctor", "runs", f"pid-{os.getpid()}"))
    rank_hooks = None
    try:
        hooks = _load_hooks(config.get("collector"))
        if config.get("distributed"):  # one rank of a torchrun job: its own folder in the job's
            rank_hooks = _load_hooks(monitor_file("rank_hooks"))
            config["run_dir"] = rank_hooks.rank_dir(config["run_dir"])
    except ImportError as exc:  # an interpreter without torch: the command still runs as under plain python
        if config.get("collector"):  # ... but a budget without its collector would only run the script
            sys.exit(f"traindoctor: this interpreter cannot import torch ({exc}): nothing to estimate")
        print(f"traindoctor: no step monitor: this interpreter cannot import torch ({exc}); "
              f"running the command without it", file=sys.stderr, flush=True)
        hooks = None
    monitor = hooks.Monitor(config) if hooks is not None else None
    if monitor is not None:
        monitor.install()
        if rank_hooks is not None:
            rank_hooks.install(monitor, config)
        elif config.get("spawn_settings"):  # mp.spawn's processes become the ranks of this run
            _load_hooks(monitor_file("rank_hooks")).install_spawn(monitor)
    if args[0] == "-m":
        if len(args) < 2:
            sys.exit("bootstrap.py: -m needs a module name")
        sys.argv = [args[1], *args[2:]]
        sys.path[0] = os.getcwd()
        target = lambda: runpy.run_module(args[1], run_name="__main__", alter_sys=True)  # noqa: E731
    else:
        script = os.path.abspath(args[0])
        sys.argv = list(args)
        sys.path[0] = os.path.dirname(script)
        target = lambda: runpy.run_path(script, run_name="__main__")  # noqa: E731
    if monitor is None:
        target()
        return
    exit_code: object = 0
    error = None
    try:
        target()
    except hooks.StopRun:
        exit_code = 0
    except SystemExit as exc:
        exit_code = exc.code
        monitor.close(exit_code)
        raise
    except BaseException as exc:
        error = f"{type(exc).__name__}: {str(exc)[:500]}"
        monitor.close(1, error)
        raise
    finally:
        monitor.close(exit_code, error)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
