"""What `watch`, `overfit`, `repro` and `curves` share: options, the report and the record.

Text goes to stderr (stdout stays the training script's); `--format json`
prints one object as the last stdout line:
{"command", "verdict", "findings": [Diagnosis + "step", ...], "steps", "run_dir", ...}.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from typing import Any, Callable

from . import errors

USAGE_TAIL = "-- python train.py ARGS"


def add_common_options(parser: argparse.ArgumentParser, *, command: bool = True) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--record", metavar="DIR", help="also write a Markdown debug record per finding into DIR")
    if command:
        parser.add_argument("--timeout", type=float, metavar="S", default=None,
                            help="stop the command after S seconds (default: no limit)")
        parser.add_argument("--runs-dir", metavar="DIR", default=None,
                            help="where run records go (default: .traindoctor/runs in the current directory)")
        parser.add_argument("--hang-after", type=float, metavar="S", default=None,
                            help="torchrun: report a hang when no rank has stepped for S seconds "
                                 "(default: 10x the median step time, at least 60 s)")
        parser.add_argument("command", nargs=argparse.REMAINDER,
                            help="python train.py ARGS | python -m module ARGS | torchrun ... train.py ARGS")


def fail(message: str, code: int = 2) -> int:
    return errors.error(message, code)


def note(message: str) -> None:
    """One progress line on stderr (`traindoctor repro: run 1/2 ...`), before output of the child's."""
    sys.stdout.flush()
    print(f"{errors.prefix()}: {message}", file=sys.stderr, flush=True)


class CommandFailed(Exception):
    """The command cannot go on: one line for the user, and the exit code."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def guarded(body: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A command's `run`: CommandFailed becomes its one line and exit code, Ctrl-C exit code 130."""

    @functools.wraps(body)
    def run(args: argparse.Namespace) -> int:
        try:
            return body(args)
        except CommandFailed as exc:
            return fail(str(exc), exc.code)
        except KeyboardInterrupt:
            return 130

    return run


def prepared(args: argparse.Namespace) -> Any:
    """The user's command, checked (CommandFailed with the reason)."""
    from ..live.launcher import LaunchError
    from ..monitor.runner import prepare

    try:
        return prepare(list(args.command))
    except LaunchError as exc:
        raise CommandFailed(str(exc)) from None


def monitored_run(debuggee: Any, args: argparse.Namespace, config: dict[str, Any], *, label: str = "",
                  debugged: bool = False) -> tuple[Any, Any]:
    """Run the command once with the monitor in a new run folder (`config` gets its `run_dir`):
    (MonitoredRun, the records read back). `debugged`: under debugpy, to stop at a step."""
    from pathlib import Path

    from ..live.launcher import LaunchError
    from ..monitor.dist_report import is_job_dir, job_from_dir
    from ..monitor.distributed import distributed_settings
    from ..monitor.launchers import is_launcher
    from ..monitor.runner import new_run_dir, run_debugged, run_plain
    from ..monitor.series import run_from_dir

    if debugged and is_launcher(debuggee):
        raise CommandFailed("--stop-on is not supported with torchrun or accelerate yet: run without it")
    run_dir = new_run_dir(debuggee, Path(args.runs_dir) if args.runs_dir else None, label)
    config = {"run_dir": str(run_dir), **config}
    if is_launcher(debuggee):
        return _distributed_run(debuggee, args, config)
    spawn = config["spawn_settings"] = distributed_settings()  # processes of mp.spawn become ranks of the run
    spawn["hang"]["hang_after"] = getattr(args, "hang_after", None)
    try:
        monitored = (run_debugged if debugged else run_plain)(debuggee, config, args.timeout)
    except LaunchError as exc:
        raise CommandFailed(str(exc)) from None
    return monitored, job_from_dir(run_dir) if is_job_dir(run_dir) else run_from_dir(run_dir)


def _distributed_run(debuggee: Any, args: argparse.Namespace, config: dict[str, Any]) -> tuple[Any, Any]:
    """A torchrun job: every rank monitored, watched for a hang; the records merged by step."""
    from ..live.launcher import LaunchError
    from ..monitor.dist_report import job_from_dir
    from ..monitor.distributed import run_distributed
    from ..monitor.launchers import torchrun_command

    try:
        monitored = run_distributed(torchrun_command(debuggee), config, args.timeout,
                                    getattr(args, "hang_after", None))
    except LaunchError as exc:
        raise CommandFailed(str(exc)) from None
    return monitored, job_from_dir(monitored.run_dir)


def rank_zero(data: Any) -> Any:
    """A distributed run's rank 0 (overfit and repro judge the run by it: DDP keeps the ranks'
    models identical), or the run itself."""
    ranks = (data.meta.get("distributed") or {}).get("ranks") or {}
    return ranks.get(0) or next(iter(ranks.values()), data) if ranks else data


def detect_findings(data: Any, source: str) -> list[Any]:
    """The detectors of `source` over a run, or over every rank of a distributed one (findings with `rank`)."""
    if data.meta.get("distributed"):
        from ..monitor.dist_report import detect_job

        return detect_job(data, source)
    from ..monitor.findings import detect

    return detect(data, source)


def write_records(findings: list[Any], directory: str | None, source_text: str) -> list[str]:
    """One Markdown record per finding (diagnose/record.py); errors as one line each."""
    if not directory:
        return []
    from ..diagnose.record import write_record

    notes = []
    for finding in findings:
        try:
            path = write_record(finding.diagnosis, directory, source_text=source_text)
            notes.append(f"record written to {path}")
        except OSError as exc:
            notes.append(f"cannot write the record to {directory}: {exc.strerror or exc}")
    return notes


def report(args: argparse.Namespace, *, command: str, verdict: str, summary: str, findings: list[Any],
           steps: int | None, run_dir: str | None, extra: dict[str, Any] | None = None,
           body: list[str] | None = None) -> None:
    from ..monitor.findings import render_finding

    notes = write_records(findings, args.record, summary + "\n" + "\n".join(body or []))
    if args.format == "json":
        payload = {"command": command, "verdict": verdict, "findings": [f.to_json() for f in findings],
                   "steps": steps, "run_dir": run_dir, "summary": summary, **(extra or {})}
        for note in notes:
            print(f"traindoctor: {note}", file=sys.stderr)
        sys.stdout.flush()
        print(json.dumps(payload, default=str, ensure_ascii=False), flush=True)
        return
    out = sys.stderr
    sys.stdout.flush()
    print(f"traindoctor: {summary}", file=out)
    for line in body or []:
        print(line, file=out)
    for finding in findings:
        print(render_finding(finding), file=out)
    for note in notes:
        print(f"traindoctor: {note}", file=out)
    out.flush()
