"""Overhead of `traindoctor watch`: training steps per second with the step monitor.

Two measurements of the same CPU training loop (an MLP fed by a DataLoader, 4-5 ms a step).

Paired, in one process (the headline figure; goals: at most 5 % with the default monitors, at
most 15 % with per-layer statistics): pairs of neighbouring steps, one with the monitor `watch`
installs (the same hooks module, loaded the way the bootstrap loads it, with `watch`'s default
settings) and one without it (its hooks and wrappers removed), in random order; pairs with an
epoch's first step are left out. The machine's drift cancels out within a pair: on this 2-core
virtual machine the speed of whole runs wanders by ±15 % and even epoch pairs spread from -3 to
+9 %, while the mean over 3,000 step pairs has a standard error of ~0.15 % of a step. Reported in
wall time and in process CPU time (every thread), as the mean slowdown and the extra µs per step.

Separate runs (end to end, start-up excluded): the same loop runs as plain `python`,
under `traindoctor watch` (default monitors) and under `traindoctor watch
--per-layer`, interleaved, in one session. The script measures its own steps
per second after a warm-up, so start-up costs are not counted. Every mode runs with the same
fixed glibc allocator thresholds (see `measure`). Reports the
median slowdown of each mode against plain python, in steps per CPU second
and per wall-clock second, the same for each mode's fastest run (the least disturbed by other
processes), and every repeat's slowdown to show the spread.

    .venv/bin/python bench/bench_watch_overhead.py [--pairs 3000] [--repeats 5] [--steps 400]
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

# The training set-up both measurements run: model, optimizer and loader.
SETUP = textwrap.dedent(
    """
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                torch.nn.ReLU(), torch.nn.Linear(512, 10))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = TensorDataset(torch.randn(4096, 256), torch.randint(0, 10, (4096,)))
    loader = DataLoader(data, batch_size=64, shuffle=True, drop_last=True)
    """
)

TRAIN = "import sys, time\n" + SETUP + textwrap.dedent(
    """
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

PAIRED = "import json, random, statistics, sys, tempfile, time\n" + SETUP + textwrap.dedent(
    """
    from traindoctor.monitor import bootstrap
    hooks = bootstrap._load_hooks()
    pairs, per_layer = int(sys.argv[1]), sys.argv[2] == "per-layer"

    def batches():
        while True:
            for index, batch in enumerate(loader):
                yield index == 0, batch

    feed = batches()

    def step():
        # (wall s, CPU s, whether the step started an epoch: a new loader iterator, milliseconds)
        wall, cpu = time.perf_counter(), time.process_time()
        first, (inputs, targets) = next(feed)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return time.perf_counter() - wall, time.process_time() - cpu, first

    for _ in range(100):
        step()
    monitor = hooks.Monitor({"run_dir": tempfile.mkdtemp(), "stop_on": None, "per_layer": per_layer})
    monitor.install()
    for _ in range(150):  # the first steps find the model and read everything every step
        step()
    originals = [(owner, name, original) for owner, name, original, _ in monitor._patched]
    monitor._remove_hooks()
    on, off = [], []
    order = random.Random(0)
    while len(on) < pairs:
        # A random order within each pair: a fixed pattern lines up with the loader's epochs (the
        # first step of an epoch starts a new iterator and costs milliseconds) and with the
        # monitor's own periodic work. Pairs with an epoch's first step are left out.
        pair = {}
        for monitored in order.sample((True, False), 2):
            if monitored:
                monitor.install()
                pair[True] = step()
                monitor._remove_hooks()
            else:
                # Setting a class attribute empties the interpreter's method cache for that class:
                # the step without the monitor pays that too.
                for owner, name, original in originals:
                    setattr(owner, name, original)
                pair[False] = step()
        if not pair[True][2] and not pair[False][2]:
            on.append(pair[True])
            off.append(pair[False])
    monitor.close(0)
    result = {}
    for key, position in (("wall", 0), ("cpu", 1)):
        with_monitor = [times[position] for times in on]
        without = [times[position] for times in off]
        differences = [a - b for a, b in zip(with_monitor, without)]
        result[key] = {"with_ms": 1e3 * statistics.fmean(with_monitor), "without_ms": 1e3 * statistics.fmean(without),
                       "extra_us": 1e6 * statistics.fmean(differences),
                       "extra_stderr_us": 1e6 * statistics.stdev(differences) / len(differences) ** 0.5}
    print(json.dumps(result))
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
    # thresholds give every mode the same allocator (that bias goes; the spread between runs on a shared machine stays).
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=workdir, env=_environment())
    found = {line.split()[0]: float(line.split()[1]) for line in done.stdout.splitlines()
             if line.startswith("steps_per_")}
    if len(found) == 2:
        return found
    raise RuntimeError(f"{mode}: no measurement (exit {done.returncode}): {done.stderr[-500:]}")


def _environment() -> dict[str, str]:
    return dict(os.environ, OMP_NUM_THREADS="1", MALLOC_MMAP_THRESHOLD_=str(4 << 20),
                MALLOC_TRIM_THRESHOLD_=str(1 << 30))


def paired(script: Path, pairs: int, mode: str, workdir: Path) -> dict[str, object]:
    """Mean slowdown (percent) of `mode` ("default" or "per-layer") over step pairs in one process."""
    done = subprocess.run([sys.executable, str(script), str(pairs), mode], capture_output=True, text=True,
                          timeout=1800, cwd=workdir, env=_environment())
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"paired {mode}: no measurement (exit {done.returncode}): {done.stderr[-500:]}")
    return {"pairs": pairs, **slowdowns(json.loads(done.stdout.strip().splitlines()[-1]))}


def slowdowns(measured: dict[str, dict[str, float]]) -> dict[str, object]:
    """A paired script's means (wall, cpu: process CPU time of every thread) as the report's rows."""
    result: dict[str, object] = {}
    for key, values in measured.items():
        result[f"{key}_slowdown_percent"] = round(100 * (values["with_ms"] / values["without_ms"] - 1), 2)
        result[f"{key}_step_ms_without"] = round(values["without_ms"], 3)
        result[f"{key}_extra_us"] = f"{values['extra_us']:.0f} ± {values['extra_stderr_us']:.0f}"
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=3000, help="step pairs of the paired measurement (0: skip it)")
    parser.add_argument("--repeats", type=int, default=5, help="separate runs per mode (0: skip them)")
    parser.add_argument("--steps", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        workdir = Path(folder)
        output: dict[str, object] = {}
        if args.pairs:
            paired_script = workdir / "paired.py"
            paired_script.write_text(PAIRED)
            output["paired"] = {mode: paired(paired_script, args.pairs, mode, workdir)
                                for mode in ("default", "per-layer")}
        if args.repeats:
            output["separate"] = separate(args, workdir)
    print(json.dumps(output, indent=2, ensure_ascii=False))


def separate(args: argparse.Namespace, workdir: Path) -> dict[str, object]:
    """Slowdowns between separate runs of plain python, `watch` and `watch --per-layer`."""
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
    return result


if __name__ == "__main__":
    main()
