"""`traindoctor` command line: one sub-module per sub-command.

Each sub-module exposes `register(subparsers)` which adds its parser and sets
`func` to a callable taking the parsed arguments and returning the exit code.
Exit codes: 0 nothing found, 1 findings or a diagnosed failure, 2 usage or
internal error (see each command for details).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .. import __version__
from . import errors

# Sub-command modules, imported lazily so `traindoctor rules` does not pay for
# pygls or debugpy.
_COMMANDS = ("check", "rules", "diagnose", "run", "serve", "watch", "overfit", "repro", "curves", "budget")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="traindoctor",
        description="Finds and fixes the bugs that ruin PyTorch training runs.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"traindoctor {__version__}")
    subparsers = parser.add_subparsers(dest="subcommand", metavar="COMMAND")
    for name in _COMMANDS:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith(__name__):
                continue  # command not built into this version
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # Report an unknown option with the usage of the command it was given to
        # (argparse would print the top-level usage); exits 2.
        commands = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        culprit = commands.choices.get(args.subcommand) if commands and args.subcommand else None
        (culprit or parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    errors.name = args.subcommand
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # never show users a traceback from the tool itself
        return errors.error(f"internal error: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    sys.exit(main())
