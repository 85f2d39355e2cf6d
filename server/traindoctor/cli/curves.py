"""`traindoctor curves FILE... [--plot out.png]`: what the loss curves of a run say.

Reads plain training logs (`loss: 0.31`, `loss=nan`, `Loss nan (nan)`, tqdm
postfixes, Hugging Face Trainer dict lines, Lightning progress lines), CSV,
JSONL (watch's steps.jsonl too) and TensorBoard event files or folders, and
finds NaN/Inf onset, divergence, spikes, plateaus, a train/val gap
(overfitting) and learning-rate schedule anomalies, each with its steps.
`--plot` writes a PNG of the curves with the findings marked.

Exit code: 0 nothing found, 1 findings, 2 unreadable input or no curve found.
"""

from __future__ import annotations

import argparse

from .monitoring import add_common_options, fail, report


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("curves", help="read loss curves from logs, CSV, JSONL or TensorBoard and find "
                                   "NaN onset, divergence, spikes, plateaus, overfitting",
                                   description=__doc__.split("\n\n")[1])
    parser.add_argument("files", nargs="+", metavar="FILE", help="log, CSV, JSONL, TensorBoard event file or folder")
    parser.add_argument("--plot", metavar="PNG", help="write the curves with the findings marked to PNG")
    add_common_options(parser, command=False)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..monitor.curves import CurvesError, read_curves
    from ..monitor.findings import detect
    from ..monitor.plot import PlotError, plot

    try:
        data = read_curves(args.files)
    except CurvesError as exc:
        return fail(str(exc))
    if not data.series:
        return fail("no loss, learning-rate or gradient-norm values found in " + ", ".join(args.files))
    findings = detect(data, "curves")
    points = max(len(s.values) for s in data.series.values())
    names = ", ".join(f"{s.name} ({len(s.values)})" for s in data.series.values())
    summary = (f"read {names}: " + (f"{len(findings)} finding(s)" if findings else "no problems found"))
    extra: dict = {"series": {s.name: len(s.values) for s in data.series.values()}}
    if args.plot:
        try:
            extra["plot"] = str(plot(data, findings, args.plot, title=", ".join(args.files)[:100]))
            summary += f"; plot written to {extra['plot']}"
        except PlotError as exc:
            return fail(str(exc))
    report(args, command="curves", verdict="problems" if findings else "ok", summary=summary, findings=findings,
           steps=points, run_dir=None, extra=extra)
    return 1 if findings else 0
