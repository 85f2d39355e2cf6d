"""The launchers `watch` follows: `torchrun` / `python -m torch.distributed.run` and `accelerate launch`.

Each becomes `python -m LAUNCHER [its options] <monitor>/bootstrap.py train.py ARGS`: the launcher
starts every rank through the bootstrap (distributed.py runs and supervises the job).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..live.launcher import DebuggeeCommand, LaunchError, _python_of_script

BOOTSTRAP = Path(__file__).resolve().parent / "bootstrap.py"

# torchrun's options that take no value (torch.distributed.run's parser; a test checks the list
# against the installed torch). Every other option takes one, as `--opt VALUE` or `--opt=VALUE`.
TORCHRUN_FLAGS = frozenset({"--standalone", "--no-python", "--no_python", "--run-path", "--run_path",
                            "--virtual-local-rank", "--virtual_local_rank", "-m", "--module", "-h", "--help"})


LAUNCHERS = ("torch.distributed.run", "accelerate.commands.launch")  # run as `python -m LAUNCHER`


@dataclass(frozen=True)
class TorchrunCommand:
    python: str
    python_options: tuple[str, ...]
    launcher_options: tuple[str, ...]  # torchrun's own, less -m/--module
    target: tuple[str, ...]  # script ARGS, or -m module ARGS
    launcher: str = "torch.distributed.run"

    def argv(self) -> list[str]:
        return [self.python, *self.python_options, "-m", self.launcher, *self.launcher_options,
                str(BOOTSTRAP), *self.target]

    @property
    def script(self) -> str:
        return self.target[1] if self.target[0] == "-m" else self.target[0]


def is_launcher(debuggee: DebuggeeCommand) -> bool:
    return debuggee.target[0] == "-m" and len(debuggee.target) > 1 and debuggee.target[1] in LAUNCHERS


def accelerate_command(command: list[str]) -> DebuggeeCommand | None:
    """`accelerate launch ARGS` as `python -m accelerate.commands.launch ARGS` (None: not one)."""
    if command and command[0] == "--":
        command = command[1:]
    if len(command) < 2 or os.path.basename(command[0]) not in ("accelerate", "accelerate.exe") \
            or command[1] != "launch":
        return None
    return DebuggeeCommand(_python_of_script(command[0]), (), ("-m", "accelerate.commands.launch", *command[2:]))


def torchrun_command(debuggee: DebuggeeCommand) -> TorchrunCommand | None:
    """The torchrun (or `accelerate launch`) job `debuggee` starts, or None for a plain python command."""
    if not is_launcher(debuggee):
        return None
    if debuggee.target[1] == "accelerate.commands.launch":
        return _accelerate(debuggee)
    args = list(debuggee.target[2:])
    options: list[str] = []
    module = False
    index = 0
    while index < len(args) and args[index].startswith("-") and args[index] != "--":
        arg = args[index]
        if arg in ("--no-python", "--no_python"):
            raise LaunchError("`torchrun --no-python` runs a program that is not Python: the monitor cannot "
                              "watch it; run the Python script itself")
        if arg in ("-h", "--help"):
            raise LaunchError("`torchrun --help` runs no training")
        if arg in ("-m", "--module"):
            module = True
        elif arg in TORCHRUN_FLAGS or "=" in arg:
            options.append(arg)
        else:
            if index + 1 >= len(args):
                raise LaunchError(f"torchrun option `{arg}` needs a value")
            options += [arg, args[index + 1]]
            index += 1
        index += 1
    if index < len(args) and args[index] == "--":
        index += 1
    if index >= len(args):
        raise LaunchError("torchrun needs a training script, e.g. `torchrun --nproc-per-node 2 train.py`")
    target = args[index:]
    if module:
        target = ["-m", *target]
    elif not os.path.exists(target[0]):
        raise LaunchError(f"no such script: {target[0]}")
    return TorchrunCommand(debuggee.python, debuggee.python_options, tuple(options), tuple(target))


def _accelerate(debuggee: DebuggeeCommand) -> TorchrunCommand:
    """accelerate's options end at the training script: the first argument that is an existing .py
    file (accelerate runs only those, less --module/--no_python, which the monitor cannot follow)."""
    args = list(debuggee.target[2:])
    if any(a in ("-m", "--module", "--no_python", "--no-python") for a in args):
        raise LaunchError("`accelerate launch --module/--no_python` is not supported by the monitor: "
                          "launch the Python script itself")
    index = next((i for i, a in enumerate(args) if a.endswith(".py") and os.path.isfile(a)), None)
    if index is None:
        raise LaunchError("accelerate launch needs an existing training script (train.py)")
    return TorchrunCommand(debuggee.python, debuggee.python_options, tuple(args[:index]), tuple(args[index:]),
                           "accelerate.commands.launch")
