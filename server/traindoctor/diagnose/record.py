"""A Markdown debug record of a failure: what failed, when, why, how to fix it,
and the environment (Python, torch, CUDA, GPU, git commit), so a team keeps
the post-mortem the ML debugging playbooks ask for."""

from __future__ import annotations

import datetime as _dt
import platform
import re
import subprocess
from pathlib import Path

from ..model import Diagnosis
from ..safegit import run_git

_SLUG = re.compile(r"[^a-z0-9]+")


def environment(cwd: Path | None = None) -> dict[str, str]:
    """Versions of this machine; each entry is best effort ("unknown" on failure).
    The git commit is that of the project in `cwd` (default: the current folder),
    which the user chose by running traindoctor there; never of a folder a log names."""
    env = {"python": platform.python_version(), "platform": platform.platform()}
    try:
        import torch  # type: ignore[import-not-found]

        env["torch"] = torch.__version__
        env["cuda"] = str(torch.version.cuda or "none (CPU build)")
        if torch.cuda.is_available():
            env["gpu"] = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
        else:
            env["gpu"] = "none visible"
    except Exception:  # torch missing or broken: the record is still useful
        env["torch"] = "not importable"
    env["git_commit"] = _git(["rev-parse", "HEAD"], cwd) or "unknown (not a git checkout)"
    dirty = _git(["status", "--porcelain", "--untracked-files=no"], cwd)
    if dirty:
        env["git_commit"] += " (with uncommitted changes)"
    return env


def _git(args: list[str], cwd: Path | None) -> str | None:
    try:
        done = run_git(args, cwd=cwd, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.decode("utf-8", "replace").strip() if done.returncode == 0 else None


def render_record(diagnosis: Diagnosis, source_text: str | None = None, *, now: _dt.datetime | None = None,
                  env: dict[str, str] | None = None) -> str:
    now = now or _dt.datetime.now(_dt.timezone.utc)
    env = env if env is not None else environment()
    details = diagnosis.details if isinstance(diagnosis.details, dict) else {}
    lines = [f"# {diagnosis.title}", "",
             f"- **Recorded:** {now.strftime('%Y-%m-%d %H:%M:%S %Z')}",
             f"- **Kind:** `{diagnosis.kind}` (failure mode `{diagnosis.mode}`), confidence {diagnosis.confidence:.2f}"]
    if diagnosis.location is not None:
        loc = diagnosis.location
        lines.append(f"- **Where:** `{loc.path}:{loc.line}` in `{loc.function}`" + (f": `{loc.code}`" if loc.code else ""))
    if diagnosis.rank is not None:
        lines.append(f"- **Rank:** {diagnosis.rank}")
    progress = details.get("progress") or {}
    when = ", ".join(f"{k.replace('_total', ' total')} {v}" for k, v in progress.items())
    lines.append(f"- **When in training:** {when or 'not stated in the log'}")
    lines += ["", "## What failed", ""]
    if diagnosis.exception is not None:
        lines += ["```", f"{diagnosis.exception.type}: {diagnosis.exception.message}".strip(), "```"]
    else:
        lines.append("No exception was printed.")
    lines += ["", "## Root cause", "", diagnosis.root_cause or "Unknown.", "", "## Evidence", ""]
    lines += [f"- {e}" for e in diagnosis.evidence] or ["- none"]
    ranks = details.get("ranks")
    if ranks:
        lines += ["", "## Ranks", ""] + [f"- rank {r}: {note}" for r, note in ranks.items()]
    lines += ["", "## Fixes (best first)", ""]
    lines += [f"{i}. **{f.title}**" + (f" — {f.detail}" if f.detail else "") for i, f in enumerate(diagnosis.fixes, 1)]
    if not diagnosis.fixes:
        lines.append("None suggested.")
    if diagnosis.related_findings:
        lines += ["", "## Related lint findings", ""]
        lines += [f"- {f.code} `{f.path}:{f.range.start.line + 1}`: {f.message}" for f in diagnosis.related_findings]
    live_env = details.get("live_env") if isinstance(details.get("live_env"), dict) else {}
    run_env = details.get("run_env") if isinstance(details.get("run_env"), dict) else {}
    lines += ["", "## Environment of the failing run", ""]
    if live_env:
        lines.append("Read from the live process:")
        lines += [f"- **{k}:** {v}" for k, v in live_env.items() if not isinstance(v, (dict, list))]
    if run_env:
        lines.append("Read from the log:")
        lines += [f"- **{k}:** {v}" for k, v in run_env.items() if k not in live_env]
    if not live_env and not run_env:
        lines.append("Not known: the log names no versions or GPU. Only the environment of the machine that "
                     "wrote this record is known (below); the run may have used another.")
    lines += ["", "## This machine (where the record was written)", ""] + [f"- **{k}:** {v}" for k, v in env.items()]
    if source_text:
        from ..internal_frames import hide_internal_frames

        tail = hide_internal_frames(source_text)[0].strip().splitlines()[-80:]
        lines += ["", "## Log (last lines)", "", "```"] + [l.replace("```", "'''") for l in tail] + ["```"]
    lines += ["", "## Follow-up", "", "- [ ] Fix applied:", "- [ ] Verified by rerunning:", ""]
    return "\n".join(lines)


def write_record(diagnosis: Diagnosis, directory: str | Path, source_text: str | None = None) -> Path:
    """Write the record as `<directory>/<UTC timestamp>-<kind>.md` and return its path."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    now = _dt.datetime.now(_dt.timezone.utc)
    slug = _SLUG.sub("-", diagnosis.kind.lower()).strip("-") or "failure"
    path = folder / f"{now.strftime('%Y%m%dT%H%M%SZ')}-{slug}.md"
    counter = 1
    while path.exists():
        counter += 1
        path = folder / f"{now.strftime('%Y%m%dT%H%M%SZ')}-{slug}-{counter}.md"
    # The commit is the current project's: a folder named in the log is not one
    # the user asked us to run git in (its config could run programs).
    path.write_text(render_record(diagnosis, source_text, now=now, env=environment()), encoding="utf-8")
    return path
