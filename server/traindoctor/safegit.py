"""Run git without letting a repository run programs of its own.

A cloned repository's `.git/config` can name programs git executes
(`core.fsmonitor`, hooks, pagers, credential helpers, diff drivers). Every git
call here disables those, ignores the system config, never prompts and never
pages, and is bounded in time.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

_SAFE_CONFIG = (
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.pager=cat",
    "-c", "core.untrackedCache=false",
    "-c", "credential.helper=",
    "-c", "diff.external=",
    "-c", "protocol.allow=never",
)


def git_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_OPTIONAL_LOCKS": "0",  # read-only: never rewrite the index behind the user's back
        "GIT_EXTERNAL_DIFF": "",
        "GIT_ASKPASS": "",
        "SSH_ASKPASS": "",
    })
    return env


def run_git(args: list[str], cwd: str | Path | None = None, *, timeout: float = 30.0) -> subprocess.CompletedProcess[bytes]:
    """`git <safe config> <args>` in `cwd`; raises OSError or subprocess.SubprocessError."""
    return subprocess.run(
        ["git", "--no-pager", *_SAFE_CONFIG, *args], cwd=cwd, env=git_environment(),
        stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
    )
