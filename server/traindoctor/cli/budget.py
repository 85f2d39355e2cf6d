"""`traindoctor budget [--gpu NAME | --gpu-memory SIZE] -- python train.py ARGS`: will one step fit?

Runs the script once with fake tensors (torch's FakeTensorMode: no memory for parameters or
activations, no GPU needed, a CUDA script works on a CPU-only machine) through its first optimizer
steps: a warm-up step, the measured step, the batch scaled x2 and x4 (peak memory against the
batch, checked for linearity) and one step per lever. Reports peak memory by category, phase and
module, FLOPs and a step-time bound on the GPU, whether it fits, the largest batch that fits, the
levers re-estimated, and what the fake step could not follow.

Exit code: 0 it fits, 1 it does not fit, 2 the estimate failed (usage, the script failed early).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from . import errors
from .monitoring import USAGE_TAIL, CommandFailed, guarded, prepared


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "budget", help="estimate a training step's memory and time on a GPU before the run (fake tensors)",
        description=__doc__.split("\n\n")[1],
        usage=f"traindoctor budget [--gpu NAME | --gpu-memory SIZE] [--format text|json] [--plot PNG] "
              f"[--world-size N] [--no-levers] {USAGE_TAIL}")
    parser.add_argument("--gpu", metavar="NAME", help="the GPU to plan for (rules/budget/gpus.yaml: a100-80gb, "
                        "h100-80gb, l4, rtx4090, ...; default a100-80gb)")
    parser.add_argument("--gpu-memory", metavar="SIZE", help="the GPU's memory, e.g. 24GiB (overrides --gpu's)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--plot", metavar="PNG", help="write memory over the step's ops, by category, to PNG")
    parser.add_argument("--world-size", type=int, default=1, metavar="N",
                        help="plan per-rank memory for N ranks (torch's fake process group; the script's own "
                             "init_process_group, DDP or fully_shard decide the strategy)")
    parser.add_argument("--no-levers", action="store_true", help="measure only the step and the batch line")
    parser.add_argument("--timeout", type=float, metavar="S", default=900,
                        help="stop the command after S seconds (default: 900; a script that never makes an "
                             "optimizer step would otherwise run to its end)")
    parser.add_argument("--runs-dir", metavar="DIR", default=None,
                        help="where run records go (default: .traindoctor/runs in the current directory)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="python train.py ARGS | python -m module ARGS")
    parser.set_defaults(func=run)


def plan(levers: bool) -> list[dict[str, Any]]:
    from ..budget.gpus import assumptions

    settings = assumptions()
    entries: list[dict[str, Any]] = [{"name": "base"}]
    entries += [{"name": f"batch x{scale}", "batch_scale": int(scale)} for scale in settings["batch_scales"]]
    if levers:
        entries += [{"name": lever, "lever": lever} for lever in settings["levers"]]
    return entries


@guarded
def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..budget.estimate import BudgetError, build_report
    from ..budget.gpus import GpuError, assumptions, choose
    from ..budget.render import render_text
    from ..live.launcher import LaunchError
    from ..monitor.runner import new_run_dir, run_plain

    try:
        gpu = choose(args.gpu, args.gpu_memory)
    except GpuError as exc:
        raise CommandFailed(str(exc)) from None
    if args.world_size < 1:
        raise CommandFailed("--world-size must be at least 1")
    debuggee = prepared(args)
    run_dir = new_run_dir(debuggee, Path(args.runs_dir) if args.runs_dir else None, "budget")
    collector = Path(__file__).resolve().parents[1] / "budget" / "collector.py"
    config = {"run_dir": str(run_dir), "collector": str(collector), "gpu": gpu.to_json(),
              "plan": plan(not args.no_levers), "world_size": args.world_size}
    print(f"traindoctor budget: running {' '.join(debuggee.target)} with fake tensors for a few steps "
          f"(planning for {gpu.name})", file=sys.stderr, flush=True)
    try:
        monitored = run_plain(debuggee, config, args.timeout)
    except LaunchError as exc:
        raise CommandFailed(str(exc)) from None
    raw_path = run_dir / "budget.json"
    if not raw_path.exists():
        raise CommandFailed(f"the script ended before a step was measured (exit code {monitored.exit_code}"
                            f"{', timed out' if monitored.timed_out else ''})")
    raw = json.loads(raw_path.read_text(encoding="utf-8"))
    settings = assumptions()
    try:
        report = build_report(raw, gpu, int(settings["reserve_bytes"]), float(settings["linearity_tolerance"]))
    except BudgetError as exc:
        raise CommandFailed(str(exc)) from None
    report["run_dir"] = str(run_dir)
    (run_dir / "report.json").write_text(json.dumps(report), encoding="utf-8")
    if args.plot:
        from ..budget.plot import plot
        from ..monitor.plot import PlotError

        try:
            report["plot"] = str(plot(report, args.plot))
        except PlotError as exc:
            errors.warning(str(exc))
    if args.format == "json":
        sys.stdout.flush()
        print(json.dumps(report, default=str), flush=True)
    else:
        sys.stdout.flush()
        sys.stderr.write(render_text(report))
        if report.get("plot"):
            print(f"plot written to {report['plot']}", file=sys.stderr)
    return 0 if report["fits"] else 1
