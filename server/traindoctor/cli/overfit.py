"""`traindoctor overfit [--steps N] [--batches K] -- python train.py ARGS`: the overfit test.

Runs the script unchanged except that every DataLoader yields its first K
batches again and again; after N optimizer steps the script is stopped. A
working model and loss drive the loss to ~0 on one batch: the verdict is
"fits" (with the loss before and after) or "does-not-fit" with the monitors'
evidence (learning rate, parameters without gradients, update ratios) and
ranked suspects tied to the lint findings in the files involved.

Exit code: 0 fits, 1 does not fit, 2 usage error or the script failed to start.
"""

from __future__ import annotations

import argparse
from .monitoring import USAGE_TAIL, add_common_options, fail, guarded, monitored_run, prepared, rank_zero, report


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "overfit", help="can the model fit one batch? (repeats the first batches, watches the loss)",
        description=__doc__.split("\n\n")[1],
        usage=f"traindoctor overfit [--steps N] [--batches K] [--format text|json] [--record DIR] {USAGE_TAIL}")
    parser.add_argument("--steps", type=int, default=200, metavar="N", help="optimizer steps to run (default 200)")
    parser.add_argument("--batches", type=int, default=1, metavar="K", help="batches to repeat (default 1)")
    add_common_options(parser)
    parser.set_defaults(func=run)


@guarded
def run(args: argparse.Namespace) -> int:
    from ..monitor.detectors import fit_summary, num
    from ..monitor.findings import detect
    from ..monitor.rules import load_monitor_rules

    if args.steps < 2 or args.batches < 1:
        return fail("--steps must be at least 2 and --batches at least 1")
    debuggee = prepared(args)
    monitored, data = monitored_run(debuggee, args, {"max_steps": args.steps, "repeat_batches": args.batches},
                                    label="overfit")
    data = rank_zero(data)
    run_dir = monitored.run_dir
    if not data.records:
        why = f"exited with code {monitored.exit_code}" if monitored.exit_code else "finished"
        return fail(f"the command {why} before its first optimizer step: nothing to fit "
                    f"(records in {run_dir})", 2)
    summary = fit_summary(data, load_monitor_rules()["does-not-fit"].params)
    findings = detect(data, "overfit")
    batches = f"{args.batches} batch" + ("es" if args.batches > 1 else "")
    if summary["fits"]:
        verdict = "fits"
        text = (f"fits {'one batch' if args.batches == 1 else batches}: loss {num(summary['first'])} → "
                f"{num(summary['last'])} in {summary['fit_step']} steps")
    else:
        verdict = "does-not-fit"
        text = (f"does not fit {'one batch' if args.batches == 1 else batches}: loss {num(summary['first'])} → "
                f"{num(summary['last'])} in {summary['steps']} steps")
    if monitored.exit_code not in (0, None):
        text += f" (the command exited with code {monitored.exit_code} after {summary['steps']} steps)"
    extra = {"exit_code": monitored.exit_code, "loss_first": summary["first"], "loss_last": summary["last"],
             "fit_step": summary["fit_step"]}
    report(args, command="overfit", verdict=verdict, summary=text, findings=findings, steps=summary["steps"],
           run_dir=str(run_dir), extra=extra)
    return 0 if verdict == "fits" else 1
