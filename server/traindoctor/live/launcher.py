"""Start the user's command under debugpy, listening on loopback.

`python [opts] train.py ARGS`, `python -m module ARGS`, `python -c CODE`,
`train.py ARGS` and `torchrun ARGS` become
`<python> [opts] -m debugpy --listen 127.0.0.1:PORT --wait-for-client <target> ARGS`.
The child inherits our stdout and stderr, so its output streams through as is.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass


class LaunchError(Exception):
    """The command cannot be run under debugpy (one line for the user)."""


# Interpreter options that take a value as the next argument.
_PY_OPTS_WITH_VALUE = {"-W", "-X", "--check-hash-based-pycs"}


@dataclass(frozen=True)
class DebuggeeCommand:
    python: str
    python_options: tuple[str, ...]
    target: tuple[str, ...]  # what follows the debugpy options: script ARGS, -m module ARGS, -c CODE ARGS

    def argv(self, host: str, port: int) -> list[str]:
        return [self.python, *self.python_options, "-m", "debugpy", "--listen", f"{host}:{port}",
                "--wait-for-client", *self.target]


def parse_command(command: list[str]) -> DebuggeeCommand:
    if not command:
        raise LaunchError("needs a command after `--`, e.g. `-- python train.py`")
    head, rest = command[0], list(command[1:])
    name = os.path.basename(head)
    if name in ("torchrun", "torchrun.exe"):
        return DebuggeeCommand(_python_of_script(head), (), ("-m", "torch.distributed.run", *rest))
    if head.endswith(".py"):
        return _from_python_args(sys.executable, command)
    if name.startswith("python") or name in ("py",):
        python = shutil.which(head) or head
        if not os.path.exists(python):
            raise LaunchError(f"cannot find the Python interpreter `{head}`")
        return _from_python_args(python, rest)
    raise LaunchError(
        f"cannot run `{head}` under debugpy: give a Python command "
        "(`python train.py`, `python -m module`, `torchrun ...`)"
    )


def _from_python_args(python: str, args: list[str]) -> DebuggeeCommand:
    options: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in ("-m", "-c"):
            if index + 1 >= len(args):
                raise LaunchError(f"`{arg}` needs a value")
            return DebuggeeCommand(python, tuple(options), tuple(args[index:]))
        if arg == "-":
            raise LaunchError("reading the program from stdin is not supported; pass a script file")
        if arg.startswith("-") and arg != "--":
            options.append(arg)
            if arg in _PY_OPTS_WITH_VALUE:
                if index + 1 >= len(args):
                    raise LaunchError(f"`{arg}` needs a value")
                options.append(args[index + 1])
                index += 1
            index += 1
            continue
        if arg == "--":
            index += 1
            continue
        if not os.path.exists(arg):
            raise LaunchError(f"no such script: {arg}")
        return DebuggeeCommand(python, tuple(options), tuple(args[index:]))
    raise LaunchError("no script or module to run")


def _python_of_script(name: str) -> str:
    """The interpreter a console script (torchrun) runs with, from its shebang."""
    path = shutil.which(name)
    if path:
        try:
            with open(path, "rb") as handle:
                first = handle.readline().decode("utf-8", "replace").strip()
            if first.startswith("#!"):
                candidate = first[2:].strip().split()[0]
                if os.path.basename(candidate).startswith("python") and os.path.exists(candidate):
                    return candidate
        except OSError:
            pass
    return sys.executable


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _start_child(parent: int) -> None:
    """In the child before exec: die with us, and take SIGINT as plain python does. A SIGINT
    ignored where traindoctor started (a background job of a script) stays ignored across
    exec, and the Ctrl-C that traindoctor catches and forwards would then do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    _die_with(parent)


def spawn(command: DebuggeeCommand, host: str, port: int, env: dict[str, str] | None = None) -> "Debuggee":
    """Start `command` under debugpy, with `env` (default: ours) as its environment."""
    env = dict(os.environ if env is None else env)
    # debugpy warns about frozen stdlib modules on every start; the warning is
    # about breakpoints in the stdlib, which we never set, and would add lines to
    # the user's stderr.
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    _become_subreaper()
    parent = os.getpid()
    try:
        # Its own process group, so that signals reach it and its children (and only
        # them); killed by the kernel if we die, however we die.
        popen = subprocess.Popen(command.argv(host, port), env=env, process_group=0,
                                 preexec_fn=lambda: _start_child(parent))
    except OSError as exc:
        raise LaunchError(f"cannot start `{command.python}`: {exc.strerror or exc}") from None
    return Debuggee(popen)


class Debuggee:
    """The debuggee's process group and every process it leaves behind.

    We are the child subreaper: the debugpy adapter (which daemonizes) and any
    orphaned grandchild are re-parented to us, so `kill_all` finds them among our
    descendants. A watchdog process outside the group kills the group if we die
    without cleaning up (SIGKILL)."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.killed_by_us = False
        self._watchdog = _start_watchdog(popen.pid)

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    def poll(self) -> int | None:
        return self.popen.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self.popen.wait(timeout)

    def signal(self, signum: int) -> None:
        """Send `signum` to the debuggee's whole process group."""
        if signum == signal.SIGKILL:
            self.killed_by_us = True
            _killpg_quietly(self.pid)
            return
        try:
            os.killpg(self.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def kill_all(self) -> None:
        """SIGKILL the group and every other descendant of ours, then reap them."""
        if self.popen.poll() is None:
            self.killed_by_us = True
        _killpg_quietly(self.pid)  # the group outlives its leader while any member lives
        keep = {self._watchdog.pid} if self._watchdog is not None else set()
        for pid in descendants(os.getpid()):
            if pid not in keep:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        try:
            self.popen.wait(10)
        except subprocess.TimeoutExpired:
            pass
        _reap_orphans(keep)

    def close(self) -> None:
        """Leave nothing behind, and dismiss the watchdog."""
        self.kill_all()
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            try:
                assert watchdog.stdin is not None
                watchdog.stdin.write(b"done")
                watchdog.stdin.close()
            except OSError:
                pass
            try:
                watchdog.wait(5)
            except subprocess.TimeoutExpired:
                watchdog.kill()
                watchdog.wait()


# Runs outside the debuggee's group and session; reads until we tell it we are
# done, or until EOF, which means we died: then it kills the group.
_WATCHDOG = """
import os, signal, sys
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
if sys.stdin.buffer.read(4) != b"done":
    try:
        os.killpg(int(sys.argv[1]), signal.SIGKILL)
    except OSError:
        pass
"""


def _start_watchdog(pgid: int) -> subprocess.Popen[bytes] | None:
    try:
        return subprocess.Popen([sys.executable, "-S", "-c", _WATCHDOG, str(pgid)], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        return None  # PR_SET_PDEATHSIG alone still takes the debuggee down with us


def descendants(root: int) -> list[int]:
    """Every live process below `root`, read from /proc (empty where there is no /proc)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields follow the last ')'.
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1 and fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _libc_prctl():
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_prctl = _libc_prctl() if sys.platform.startswith("linux") else None


def _die_with(parent: int) -> None:
    """In the forked child, before exec: die with SIGKILL when `parent` dies."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(137)


def _become_subreaper() -> None:
    if _prctl is not None:
        _prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _killpg_quietly(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reap_orphans(keep: set[int]) -> None:
    """Collect the exit status of re-parented processes we killed (no zombies)."""
    for _ in range(200):
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            alive = [p for p in descendants(os.getpid()) if p not in keep]
            if not alive:
                return
            time.sleep(0.01)


def exit_code(returncode: int) -> int:
    """The shell's convention: a child killed by signal N exits 128+N."""
    if returncode < 0:
        return 128 + (-returncode)
    return returncode


def signal_name(returncode: int) -> str | None:
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"
