"""Overhead of `traindoctor watch`: training steps per second with the step monitor.

The same CPU training loop (an MLP fed by a DataLoader) runs as plain `python`,
under `traindoctor watch` (default monitors) and under `traindoctor watch
--per-layer`, interleaved, in one session. The script measures its own steps
per second after a warm-up, so start-up costs are not counted. Every mode runs with the same
fixed glibc allocator thresholds (see `measure`). Reports the
median slowdown of each mode against plain python, in steps per CPU second
(what the monitor adds; robust on a shared machine) and per wall-clock second
(goals: at most 5 % with the default monitors, at most 15 % with per-layer
statistics), the same for each mode's fastest run (the least disturbed by other
processes), and every repeat's slowdown to show the spread.

    .venv/bin/python bench/bench_watch_overhead.py [--repeats 5] [--steps 400]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

TRAIN = textwrap.dedent(
    """
    import sys, time
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                torch.nn.ReLU(), torch.nn.Linear(512, 10))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = TensorDataset(torch.randn(4096, 256), torch.randint(0, 10, (4096,)))
    loader = DataLoader(data, batch_size=64, shuffle=True, drop_last=True)
    steps, warmup = int(sys.argv[1]), 30
    done = 0
    start = None
    while done < steps + warmup:
        for inputs, targets in loader:
            if done == warmup:
                start, cpu_start = time.perf_counter(), time.process_time()
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(inputs), targets)
            loss.backward()
            optimizer.step()
            done += 1
            if done == steps + warmup:
                break
    print("steps_per_sec", steps / (time.perf_counter() - start))
    print("steps_per_cpu_sec", steps / (time.process_time() - cpu_start))
    """
)

MODES = {
    "plain": [],
    "watch": ["-m", "traindoctor", "watch", "--"],
    "watch --per-layer": ["-m", "traindoctor", "watch", "--per-layer", "--"],
}


def measure(mode: str, script: Path, steps: int, workdir: Path) -> dict[str, float]:
    prefix = MODES[mode]
    command = [sys.executable, *prefix, sys.executable, str(script), str(steps)] if prefix else \
        [sys.executable, str(script), str(steps)]
    # glibc's allocator adapts its mmap threshold to what a process freed before: the monitor's own
    # start-up allocations moved it, and the 128 KB activations of this loop then came from the
    # heap instead of fresh pages, which made watched runs ~20 % *faster* than plain ones. Fixed
    # thresholds give every mode the same allocator (and run-to-run spread drops from ~15 % to ~1 %).
    env = dict(os.environ, OMP_NUM_THREADS="1", MALLOC_MMAP_THRESHOLD_=str(4 << 20),
               MALLOC_TRIM_THRESHOLD_=str(1 << 30))
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=workdir, env=env)
    found = {line.split()[0]: float(line.split()[1]) for line in done.stdout.splitlines()
             if line.startswith("steps_per_")}
    if len(found) == 2:
        return found
    raise RuntimeError(f"{mode}: no measurement (exit {done.returncode}): {done.stderr[-500:]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        workdir = Path(folder)
        script = workdir / "train.py"
        script.write_text(TRAIN)
        rates: dict[str, dict[str, list[float]]] = {m: {"steps_per_sec": [], "steps_per_cpu_sec": []} for m in MODES}
        ratios: dict[str, dict[str, list[float]]] = {m: {"steps_per_sec": [], "steps_per_cpu_sec": []}
                                                     for m in MODES if m != "plain"}
        order = list(MODES)
        for repeat in range(args.repeats):
            # Rotate the order every repeat: whichever mode runs first in a round was
            # otherwise systematically favoured or penalised (caches, frequency, load ramps).
            turn = order[repeat % len(order):] + order[:repeat % len(order)]
            measured = {mode: measure(mode, script, args.steps, workdir) for mode in turn}
            for mode, values in measured.items():
                for key, value in values.items():
                    rates[mode][key].append(value)
                    if mode != "plain":
                        ratios[mode][key].append(1 - value / measured["plain"][key])
    result = {
        "steps": args.steps,
        "repeats": args.repeats,
        # CPU time per step is what the monitor adds; wall time also carries the machine's load.
        "steps_per_cpu_sec_median": {m: round(statistics.median(v["steps_per_cpu_sec"]), 1) for m, v in rates.items()},
        "slowdown_cpu_median_percent": {m: round(100 * statistics.median(v["steps_per_cpu_sec"]), 1)
                                        for m, v in ratios.items()},
        "steps_per_sec_median": {m: round(statistics.median(v["steps_per_sec"]), 1) for m, v in rates.items()},
        "slowdown_wall_median_percent": {m: round(100 * statistics.median(v["steps_per_sec"]), 1)
                                         for m, v in ratios.items()},
        # Each mode's fastest run against plain's fastest: other processes only ever slow a run
        # down, so on a shared machine the best of several runs is the least disturbed estimate.
        "slowdown_wall_best_percent": {m: round(100 * (1 - max(rates[m]["steps_per_sec"])
                                                       / max(rates["plain"]["steps_per_sec"])), 1)
                                       for m in ratios},
        "slowdown_cpu_best_percent": {m: round(100 * (1 - max(rates[m]["steps_per_cpu_sec"])
                                                      / max(rates["plain"]["steps_per_cpu_sec"])), 1)
                                      for m in ratios},
        # Every repeat's slowdown, in run order: the spread a shared machine gives the medians above.
        "slowdown_wall_each_percent": {m: [round(100 * r, 1) for r in v["steps_per_sec"]] for m, v in ratios.items()},
        "slowdown_cpu_each_percent": {m: [round(100 * r, 1) for r in v["steps_per_cpu_sec"]] for m, v in ratios.items()},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
