"""`traindoctor budget`'s prediction against a real GPU: five models, two batch sizes, the largest batch.

    python tests/gpu/budget_gpu.py --out budget_gpu.json          (on a machine with a CUDA GPU)
    python tests/gpu/budget_gpu.py --out dry.json --dry-run       (on CPU: the same path, no GPU numbers)

Needs only torch (no traindoctor install, no network): the prediction runs the budget's collector
through the monitor's bootstrap by path, exactly as `traindoctor budget` does, with the GPU hidden
(CUDA_VISIBLE_DEVICES=""), on tests/budget/scripts/train_model.py with --device cuda. The real runs
are the same script on the GPU, which writes torch.cuda.max_memory_allocated() of its second step.

For each model (MLP, ResNet-18, small GPT, U-Net, ViT):
  1. predicted peak at batch B and 2B (and 4B, for the batch line) vs the real peak at B and 2B;
  2. the largest batch that fits under a memory cap (--cap-gib, enforced on the real GPU with
     torch.cuda.set_per_process_memory_fraction), from the predicted line; then a real run at that
     batch (claim: it fits) and at 10 % more (claim: it runs out of memory).
Prints one table and writes everything to --out as JSON.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOOTSTRAP = ROOT / "server" / "traindoctor" / "monitor" / "bootstrap.py"
COLLECTOR = ROOT / "server" / "traindoctor" / "budget" / "collector.py"
SCRIPT = ROOT / "tests" / "budget" / "scripts" / "train_model.py"
MODELS = ("mlp", "resnet18", "gpt", "unet", "vit")
GPU_BATCH = {"mlp": 4096, "resnet18": 64, "gpt": 32, "unet": 32, "vit": 64}
DRY_BATCH = {"mlp": 8, "resnet18": 2, "gpt": 2, "unet": 2, "vit": 2}
TOLERANCE = 0.05  # the same linearity check as rules/budget/budget.yaml


def predict(model: str, batch: int, gpu: dict, work: Path, timeout: float) -> dict:
    """The collector's measurements (budget.json) for the script at `batch`, x2 and x4."""
    run_dir = work / f"predict-{model}"
    config = {"run_dir": str(run_dir), "collector": str(COLLECTOR), "gpu": gpu, "world_size": 1,
              "plan": [{"name": "base"}, {"name": "batch x2", "batch_scale": 2},
                       {"name": "batch x4", "batch_scale": 4}]}
    env = dict(os.environ, TRAINDOCTOR_MONITOR=json.dumps(config), CUDA_VISIBLE_DEVICES="",
               OMP_NUM_THREADS="1")
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(BOOTSTRAP), str(SCRIPT), "--model", model, "--batch", str(batch),
                           "--device", "cuda"], env=env, capture_output=True, text=True, timeout=timeout)
    path = run_dir / "budget.json"
    if not path.exists():
        raise RuntimeError(f"{model}: no prediction (exit {done.returncode}): {done.stderr[-800:]}")
    raw = json.loads(path.read_text())
    measured = [r for r in raw["results"] if not r.get("skipped")]
    return {"peaks": {batch * r["batch_scale"]: int(r["peak_bytes"]) for r in measured},
            "phase_peaks": {batch * r["batch_scale"]: r["phase_peaks"] for r in measured},
            "seconds": round(time.monotonic() - started, 1), "unaccounted": raw.get("unaccounted", [])}


def largest_batch(phase_peaks: dict[int, dict[str, int]], cap: int) -> tuple[int | None, bool]:
    """As the budget's report computes it (estimate.largest_batch): per phase, peak = fixed + per_sample *
    batch through the two smallest batches (the third checks linearity; when it is off, the two largest);
    the largest batch keeps every phase's line under the cap. (batch or None, all phases linear)."""
    batches = sorted(phase_peaks)
    limits, linear = [], True
    for phase in ("forward", "backward", "optimizer"):
        samples = [(b, phase_peaks[b].get(phase, 0)) for b in batches]
        if any(p == 0 for _, p in samples) or len(samples) < 2:
            continue
        (b1, p1), (b2, p2) = samples[0], samples[1]
        if len(samples) > 2:
            per = (p2 - p1) / (b2 - b1)
            b3, p3 = samples[2]
            if abs(p3 - (p1 + per * (b3 - b1))) / p3 > TOLERANCE:
                linear = False
                (b1, p1), (b2, p2) = samples[-2], samples[-1]
        per_sample = (p2 - p1) / (b2 - b1)
        fixed = p1 - per_sample * b1
        if per_sample > 0:
            limits.append(math.floor((cap - fixed) / per_sample))
        elif fixed > cap:
            limits.append(0)
    return (max(1, min(limits)) if limits else None), linear


def real(model: str, batch: int, device: str, work: Path, timeout: float, cap: int | None = None) -> dict:
    out = work / f"real-{model}-{batch}{'-cap' if cap else ''}.json"
    command = [sys.executable, str(SCRIPT), "--model", model, "--batch", str(batch), "--device", device,
               "--report-peak", str(out)]
    if cap and device == "cuda":
        command += ["--memory-cap", str(cap)]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if not out.exists():
        return {"error": f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:] or ''}",
                "seconds": round(time.monotonic() - started, 1)}
    result = json.loads(out.read_text())
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="where the JSON results go")
    parser.add_argument("--dry-run", action="store_true", help="on CPU: tiny batches, no GPU numbers")
    parser.add_argument("--models", default=None, help=f"comma-separated subset of {','.join(MODELS)}")
    parser.add_argument("--cap-gib", type=float, default=2.0, help="memory cap for the largest-batch check")
    parser.add_argument("--budget-s", type=float, default=210,
                        help="skip the remaining real runs after this many seconds (the whole check must stay "
                             "under 4 minutes on one GPU)")
    parser.add_argument("--timeout", type=float, default=150, help="seconds per subprocess")
    args = parser.parse_args()
    import torch

    started = time.monotonic()
    models = tuple(args.models.split(",")) if args.models else (("mlp", "gpt") if args.dry_run else MODELS)
    dry = args.dry_run
    if not dry and not torch.cuda.is_available():
        print("budget_gpu: no CUDA GPU here (use --dry-run on CPU)", file=sys.stderr)
        return 2
    device = "cpu" if dry else "cuda"
    if dry:
        gpu = {"name": "dry run (CPU)", "memory_bytes": 16 << 30, "tflops": {"fp32": 19.5, "bf16": 312},
               "bandwidth_gbs": 2039}
    else:
        props = torch.cuda.get_device_properties(0)
        gpu = {"name": props.name, "memory_bytes": int(props.total_memory),
               "tflops": {"fp32": 67, "bf16": 989, "fp16": 989}, "bandwidth_gbs": 4800}
    cap = int((1 / 64 if dry else args.cap_gib) * (1 << 30))
    sizes = DRY_BATCH if dry else GPU_BATCH
    rows, claims, errors = [], [], []
    with tempfile.TemporaryDirectory(prefix="budget-gpu-") as tmp:
        work = Path(tmp)
        # The fake predictions use the CPU only: all at once, while nothing else runs.
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(models)) as pool:
            futures = {m: pool.submit(predict, m, sizes[m], gpu, work, args.timeout) for m in models}
            predictions = {}
            for model, future in futures.items():
                try:
                    predictions[model] = future.result()
                except Exception as exc:  # noqa: BLE001 - reported in the table and the JSON
                    errors.append(f"{model}: prediction failed: {exc}")
        for model in models:
            if model not in predictions:
                continue
            prediction = predictions[model]
            for batch in (sizes[model], 2 * sizes[model]):
                if time.monotonic() - started > args.budget_s:
                    errors.append(f"{model} at batch {batch}: skipped, past --budget-s {args.budget_s:.0f}")
                    continue
                measured = real(model, batch, device, work, args.timeout)
                predicted = prediction["peaks"].get(batch)
                peak = measured.get("max_memory_allocated")
                error = (predicted - peak) / peak if predicted and peak else None
                rows.append({"model": model, "batch": batch, "predicted_bytes": predicted, "real_bytes": peak,
                             "error": error, "real_error": measured.get("error"),
                             "predict_seconds": prediction["seconds"], "real_seconds": measured.get("seconds")})
            max_batch, linear = largest_batch(prediction["phase_peaks"], cap)
            claim = {"model": model, "cap_bytes": cap, "max_batch": max_batch, "linear": linear}
            if max_batch and time.monotonic() - started > args.budget_s:
                errors.append(f"{model}: largest-batch check skipped, past --budget-s {args.budget_s:.0f}")
            elif max_batch:
                above = math.ceil(max_batch * 1.1)
                at = real(model, max_batch, device, work, args.timeout, cap)
                over = real(model, above, device, work, args.timeout, cap)
                claim.update({"batch_plus_10pct": above, "at_max": _outcome(at, dry), "at_plus_10pct": _outcome(over, dry),
                              "at_max_real_bytes": at.get("max_memory_allocated")})
                if not dry:
                    claim["holds"] = claim["at_max"] == "fits" and claim["at_plus_10pct"] == "oom"
            claims.append(claim)
    result = {"device": gpu["name"], "torch": torch.__version__, "dry_run": dry, "rows": rows, "claims": claims,
              "errors": errors, "seconds": round(time.monotonic() - started, 1)}
    Path(args.out).write_text(json.dumps(result, indent=1))
    _print_table(result)
    return 1 if errors else 0


def _outcome(run: dict, dry: bool) -> str:
    if run.get("error"):
        return f"error ({run['error']})"
    if run.get("oom"):
        return "oom"
    return "ran (CPU: not checked)" if dry else "fits"


def _print_table(result: dict) -> None:
    mib = 1 << 20
    print(f"budget vs real on {result['device']} (torch {result['torch']}){' DRY RUN' if result['dry_run'] else ''}")
    print(f"{'model':<9} {'batch':>6} {'predicted MiB':>14} {'real MiB':>10} {'error':>8}")
    for row in result["rows"]:
        real_mib = f"{row['real_bytes'] / mib:10.1f}" if row["real_bytes"] else f"{'-':>10}"
        error = f"{row['error']:+8.1%}" if row["error"] is not None else f"{'-':>8}"
        predicted = f"{row['predicted_bytes'] / mib:14.1f}" if row["predicted_bytes"] else f"{'-':>14}"
        print(f"{row['model']:<9} {row['batch']:>6} {predicted} {real_mib} {error}")
    print("largest batch under the cap (predicted), real run at it and at +10%:")
    for claim in result["claims"]:
        print(f"  {claim['model']:<9} cap {claim['cap_bytes'] / mib:.0f} MiB: max batch {claim['max_batch']} "
              f"-> {claim.get('at_max')}; {claim.get('batch_plus_10pct')} -> {claim.get('at_plus_10pct')}"
              f"{'' if claim['linear'] else ' (not linear)'}"
              + (f"; claim {'holds' if claim.get('holds') else 'FAILS'}" if "holds" in claim else ""))
    for error in result["errors"]:
        print(f"  error: {error}")
    print(f"({result['seconds']:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
