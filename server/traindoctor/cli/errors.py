"""One-line errors that name the sub-command they come from.

`traindoctor repro` with no command must say "traindoctor repro: ...", not a
message of another sub-command; `main` sets `name` before the sub-command runs.
"""

from __future__ import annotations

import sys

# The sub-command running in this process ("check", "repro", ...); one per process.
name = ""


def prefix() -> str:
    return f"traindoctor {name}" if name else "traindoctor"


def error(message: str, code: int = 2) -> int:
    """Print `traindoctor <command>: <message>` on stderr; return `code`."""
    print(f"{prefix()}: {message}", file=sys.stderr)
    return code


def warning(message: str, code: int = 2) -> int:
    print(f"{prefix()}: warning: {message}", file=sys.stderr)
    return code
