"""`traindoctor watch -- torchrun` on GPUs: NCCL with 2 ranks, or the single-rank path on one GPU.

    python tests/gpu/dist_gpu.py --out dist_gpu.json             (a machine with CUDA GPUs)
    python tests/gpu/dist_gpu.py --out dry.json --dry-run        (on CPU: gloo, 2 ranks, the same checks)

Runs tests/monitor/scripts/ddp_train.py (a real DDP job) under `python -m traindoctor watch --format
json -- python -m torch.distributed.run --nproc-per-node N ...` (traindoctor from this checkout's
server/ when it is not installed), once per planted failure, and checks each report:

- 2+ GPUs (NCCL, 2 ranks): healthy is quiet; a NaN on rank 1 names rank 1; a weight changed on
  rank 1 outside DDP is a desync at step 10; a slow loader on rank 1 is a data straggler; rank 0
  alone in an all_reduce while rank 1 sleeps is a hang (with NCCL the all_reduce returns before
  it completes: where rank 0 blocks is recorded, not checked), and no rank is left after it.
- 1 GPU (NCCL, 1 rank): healthy is quiet, a NaN names rank 0.
Prints one line per case and writes everything to --out; exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "monitor" / "scripts" / "ddp_train.py"


def environment() -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("TRAINDOCTOR_MONITOR", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "server"), env.get("PYTHONPATH")]))
    return env


def watch(mode: str, steps: int, ranks: int, device: str, work: Path, *options: str) -> dict:
    command = [sys.executable, "-m", "traindoctor", "watch", "--format", "json", "--timeout", "240",
               "--runs-dir", str(work / "runs"), *options, "--", sys.executable, "-m", "torch.distributed.run",
               "--nproc-per-node", str(ranks), str(SCRIPT), mode, str(steps), device]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=work, env=environment())
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    payload = json.loads(lines[-1]) if lines else {}
    return {"mode": mode, "exit": done.returncode, "seconds": round(time.monotonic() - started, 1),
            "findings": [(f["kind"], f["rank"], f["step"]) for f in payload.get("findings", [])],
            "payload": payload, "stderr_tail": done.stderr[-2000:] if not payload else ""}


def left_over() -> list[str]:
    listing = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in listing.splitlines() if str(SCRIPT) in line]


def cases(ranks: int) -> list[tuple[str, int, tuple[str, ...], object]]:
    """(mode, steps, options, check(result) -> failure text or None)."""

    def quiet(result: dict) -> str | None:
        return None if result["findings"] == [] and result["exit"] == 0 else f"expected quiet: {result['findings']}"

    def finds(kind: str, rank: int, step: int | None = None):
        def check(result: dict) -> str | None:
            hits = [f for f in result["findings"] if f[0] == kind]
            if not hits or hits[0][1] != rank or (step is not None and hits[0][2] != step):
                at = f" at step {step}" if step else ""
                return f"expected {kind} on rank {rank}{at}: {result['findings']}"
            return None
        return check

    def hang(result: dict) -> str | None:
        failure = finds("distributed-hang", 1)(result)
        return failure or (f"processes left: {left_over()}" if left_over() else None)

    out = [("healthy", 20, (), quiet), ("nan", 8, (), finds("nan-onset", ranks - 1, 6))]
    if ranks >= 2:
        out += [("desync", 12, (), finds("distributed-desync", 1, 10)),
                ("straggler", 12, (), finds("distributed-straggler", 1)),
                ("hang-sleep", 20, ("--hang-after", "10"), hang)]
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--dry-run", action="store_true", help="on CPU: gloo, 2 ranks")
    parser.add_argument("--only", nargs="*", help="these modes only")
    args = parser.parse_args()
    import torch

    gpus = 0 if args.dry_run else torch.cuda.device_count()
    if not args.dry_run and gpus == 0:
        print("no CUDA GPU: run with --dry-run", file=sys.stderr)
        return 2
    ranks, device = (2, "cpu") if args.dry_run else (min(gpus, 2), "cuda")
    work = Path(args.out).resolve().parent / "dist_gpu_work"
    work.mkdir(parents=True, exist_ok=True)
    results, failures = [], []
    for mode, steps, options, check in cases(ranks):
        if args.only and mode not in args.only:
            continue
        result = watch(mode, steps, ranks, device, work, *options)
        result["failure"] = check(result)
        results.append(result)
        print(f"{mode:11s} ranks={ranks} {device}: {'ok' if not result['failure'] else 'FAIL ' + result['failure']} "
              f"({result['seconds']} s) {result['findings']}", flush=True)
        if result["failure"]:
            failures.append(mode)
    summary = {"torch": torch.__version__, "gpus": gpus, "ranks": ranks, "device": device, "dry_run": args.dry_run,
               "failures": failures, "results": results}
    Path(args.out).write_text(json.dumps(summary, indent=2, default=str))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
