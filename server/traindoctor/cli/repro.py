"""`traindoctor repro [--steps N] -- python train.py ARGS`: is the run reproducible?

Runs the command twice for N optimizer steps with the monitor, the second time
with `torch.use_deterministic_algorithms(True, warn_only=True)`, and compares
the per-step losses and a checksum of the parameters. Verdict "identical", or
"differs" with the first differing step, by how much, and the suspects:
unseeded generators drawn from at run time, nondeterministic operations hit,
cudnn.benchmark, and the static reproducibility findings (TRN2xx).

Exit code: 0 identical, 1 differs, 2 usage error or a run that did not step.
"""

from __future__ import annotations

import argparse
from .monitoring import USAGE_TAIL, add_common_options, fail, guarded, monitored_run, note, prepared, rank_zero, report


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "repro", help="run the command twice and compare losses and parameters step by step",
        description=__doc__.split("\n\n")[1],
        usage=f"traindoctor repro [--steps N] [--format text|json] [--record DIR] {USAGE_TAIL}")
    parser.add_argument("--steps", type=int, default=50, metavar="N", help="optimizer steps per run (default 50)")
    add_common_options(parser)
    parser.set_defaults(func=run)


@guarded
def run(args: argparse.Namespace) -> int:
    from ..monitor.detectors import compare_runs
    from ..monitor.findings import detect

    if args.steps < 1:
        return fail("--steps must be at least 1")
    debuggee = prepared(args)
    runs = []
    for label, deterministic in (("repro-a", False), ("repro-b", True)):
        config = {"max_steps": args.steps, "fingerprint_rng": True, "checksum": True, "deterministic": deterministic}
        # The two runs print one after the other on the same terminal: say whose output follows.
        note(f"run {len(runs) + 1}/2" + (" (torch.use_deterministic_algorithms(True, warn_only=True))"
                                          if deterministic else "") + f", {args.steps} steps:")
        monitored, data = monitored_run(debuggee, args, config, label=label)
        data = rank_zero(data)
        if not data.records:
            return fail(f"run {len(runs) + 1} made no optimizer step (exit code {monitored.exit_code}; "
                        f"records in {monitored.run_dir})")
        runs.append((data, monitored))
    (first, first_run), (second, _) = runs
    first.other = second
    findings = detect(first, "repro")
    comparison = compare_runs(first, second)
    verdict = "differs" if findings else "identical"
    steps = comparison["steps"]
    if verdict == "identical":
        text = f"identical: {steps} steps, same losses and parameter checksum ({comparison['checksum_a']})"
    elif comparison["step"] is not None:
        text = (f"differs from step {comparison['step']}: loss {comparison['loss_a']} vs {comparison['loss_b']} "
                f"(difference {comparison['delta']})")
    else:
        text = f"differs: same losses for {steps} steps but different parameter checksums"
    extra = {"first_differing_step": comparison["step"], "run_dirs": [str(first_run.run_dir), str(runs[1][1].run_dir)],
             "checksums": [comparison["checksum_a"], comparison["checksum_b"]]}
    report(args, command="repro", verdict=verdict, summary=text, findings=findings, steps=steps,
           run_dir=str(first_run.run_dir), extra=extra)
    return 0 if verdict == "identical" else 1
