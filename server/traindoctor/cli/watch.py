"""`traindoctor watch [--stop-on nan|any] -- python train.py ARGS`: runs that fail without crashing.

Runs the command unchanged with the step monitor (public torch hooks), writes
one JSONL record per optimizer step under .traindoctor/runs/<run-id>/, and runs
the detectors of rules/monitors/ over them: NaN onset, divergence, spikes,
gradient explosion, no learning, memory growth, data starvation, eval mode.
With `--stop-on`, the command runs under debugpy and stops at the first
non-finite loss or gradient (`any`: also at a loss spike) before the optimizer
applies it; the live diagnosis then reads the training frame.

Exit code: the command's when it failed; else 1 when problems were found, 0 when not.
"""

from __future__ import annotations

import argparse
from typing import Any

from .monitoring import USAGE_TAIL, add_common_options, detect_findings, guarded, monitored_run, prepared, report


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "watch", help="run a training command with the step monitor and report NaN, divergence, leaks, starvation",
        description=__doc__.split("\n\n")[1], usage=f"traindoctor watch [--format text|json] [--record DIR] "
        f"[--stop-on nan|any] {USAGE_TAIL}")
    parser.add_argument("--stop-on", choices=("nan", "any"), default=None,
                        help="stop under the debugger at the first NaN/Inf (any: or loss spike) and diagnose it live")
    parser.add_argument("--per-layer", action="store_true", help="also record every parameter's gradient norm")
    add_common_options(parser)
    parser.set_defaults(func=run)


@guarded
def run(args: argparse.Namespace) -> int:
    from ..monitor.rules import load_monitor_rules

    debuggee = prepared(args)
    config: dict[str, Any] = {"stop_on": args.stop_on, "per_layer": args.per_layer}
    if args.stop_on == "any":
        spike = load_monitor_rules()["loss-spike"].params
        config["stop_spike_factor"] = float(spike.get("factor", 3.0)) * 3
    monitored, data = monitored_run(debuggee, args, config, debugged=bool(args.stop_on))
    run_dir = monitored.run_dir
    findings = detect_findings(data, "watch")
    body: list[str] = []
    extra: dict[str, Any] = {"exit_code": monitored.exit_code}
    if monitored.live is not None:
        findings, live_lines, live_json = _with_live(findings, monitored.live)
        body += live_lines
        extra["live"] = live_json
    if monitored.timed_out:
        extra["timed_out"] = True
    if data.meta.get("distributed"):
        from ..monitor.dist_report import job_summary

        extra["distributed"] = job_summary(data)
    if data.meta.get("monitor_error"):
        extra["monitor_error"] = data.meta["monitor_error"]
        body.append(f"traindoctor: the monitor stopped measuring after step {len(data.records)} "
                    f"(the run went on): {data.meta['monitor_error'][:200]}")
    steps = (data.meta.get("distributed") or {}).get("steps") or len(data.records)
    verdict = "problems" if findings else "ok"
    summary = _summary(steps, findings, monitored, str(run_dir), started=bool(data.meta),
                       world=(extra.get("distributed") or {}).get("world_size") or 0)
    report(args, command="watch", verdict=verdict, summary=summary, findings=findings, steps=steps,
           run_dir=str(run_dir), extra=extra, body=body)
    if monitored.exit_code != 0:
        return monitored.exit_code
    return 1 if findings else 0


def _summary(steps: int, findings: list[Any], monitored: Any, run_dir: str, started: bool, world: int = 0) -> str:
    if not started:  # the bootstrap said why (e.g. an interpreter without torch)
        return f"the step monitor did not start: nothing was watched (command exit code {monitored.exit_code})"
    stopped = ""
    ranks = f" on each of {world} ranks" if world > 1 else ""
    if monitored.live is not None:
        stopped = ", stopped under the debugger"
    elif any(f.diagnosis.kind == "distributed-hang" for f in findings):
        stopped = ", stopped after it hung"
    elif monitored.timed_out:
        stopped = ", stopped at the timeout"
    if not findings:
        return f"watched {steps} optimizer steps{ranks}{stopped}: no problems found (records in {run_dir})"
    kinds = ", ".join(dict.fromkeys(f.diagnosis.kind + (f" at step {f.step}" if f.step is not None else "")
                                    + (f" on rank {f.diagnosis.rank}" if f.diagnosis.rank is not None else "")
                                    for f in findings))
    return (f"watched {steps} optimizer steps{ranks}{stopped}: {len(findings)} problem(s): {kinds} "
            f"(records in {run_dir})")


def _with_live(findings: list[Any], stop: Any) -> tuple[list[Any], list[str], dict[str, Any]]:
    """The live diagnosis of the stop joins the NaN-onset finding (its frame, its tensors)."""
    import dataclasses

    from ..diagnose import render_text

    live = stop.diagnosis
    frame = getattr(stop.probes, "frame", None)  # where the probes ran: the user's training line
    if live is not None and frame is not None:
        live = dataclasses.replace(live, location=frame)
    live_json: dict[str, Any] = {"exception_type": stop.exception_type, "message": stop.message,
                                 "process": stop.process}
    lines: list[str] = []
    if live is not None:
        live_json["diagnosis"] = live.to_json()
        lines = ["traindoctor: live diagnosis in the training frame:", render_text(live).rstrip("\n")]
    elif stop.error:
        live_json["error"] = stop.error
    out = []
    attached = False
    for finding in findings:
        if not attached and finding.diagnosis.kind == "nan-onset":
            diagnosis = finding.diagnosis
            details = dict(diagnosis.details)
            details["live"] = live_json.get("diagnosis") or live_json
            location = diagnosis.location
            if frame is not None:
                location = frame
                details["stopped_at"] = frame.to_json()
            diagnosis = dataclasses.replace(diagnosis, details=details, location=location, frames=(location,)
                                            if location is not None else diagnosis.frames)
            finding = dataclasses.replace(finding, diagnosis=diagnosis)
            attached = True
        out.append(finding)
    return out, lines, live_json
