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
        raise LaunchError("run needs a command after `--`, e.g. `traindoctor run -- python train.py`")
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


def spawn(command: DebuggeeCommand, host: str, port: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    # debugpy warns about frozen stdlib modules on every start; the warning is
    # about breakpoints in the stdlib, which we never set, and would add lines to
    # the user's stderr.
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    try:
        return subprocess.Popen(command.argv(host, port), env=env)
    except OSError as exc:
        raise LaunchError(f"cannot start `{command.python}`: {exc.strerror or exc}") from None


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
