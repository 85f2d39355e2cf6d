"""Overhead of `traindoctor run`: training speed under debugpy, and time to a diagnosis.

1. Steps per second of the same CPU training loop, plain `python` vs `traindoctor
   run -- python`, interleaved runs in one session; reports the median ratio
   (goal: at most 10 % slower).
2. Time from the exception being raised (the script prints a timestamp just
   before) to the diagnosis line on traindoctor's stderr (goal: under 2 s).

    .venv/bin/python bench/bench_live_overhead.py [--repeats 3] [--steps 300]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

TRAIN = textwrap.dedent(
    """
    import sys, time
    import torch
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                torch.nn.ReLU(), torch.nn.Linear(512, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, targets = torch.randn(64, 256), torch.randint(0, 10, (64,))

    def step():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return loss

    steps = int(sys.argv[1])
    for _ in range(20):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    print("steps_per_sec", steps / (time.perf_counter() - start))
    """
)

FAIL = textwrap.dedent(
    """
    import time
    import torch
    model = torch.nn.Linear(10, 5)
    inputs = torch.randn(8, 20)
    print("raising_at", time.time(), flush=True)
    model(inputs)
    """
)


def _steps_per_sec(command: list[str]) -> float:
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    for line in done.stdout.splitlines():
        if line.startswith("steps_per_sec"):
            return float(line.split()[1])
    raise SystemExit(f"no measurement from {command}: {done.stderr[-2000:]}")


def _time_to_diagnosis(script: Path) -> tuple[float, float]:
    """(wall seconds from raise to the printed diagnosis, traindoctor's own measure)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "traindoctor", "run", "--", sys.executable, str(script)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    raised_at = None
    assert process.stdout is not None and process.stderr is not None
    for line in process.stdout:
        if line.startswith("raising_at"):
            raised_at = float(line.split()[1])
            break
    printed_at = own = None
    for line in process.stderr:
        if line.startswith("traindoctor: live diagnosis"):
            printed_at = time.time()
            own = float(line.rsplit("(", 1)[1].split()[0])
            break
    process.communicate(timeout=120)
    if raised_at is None or printed_at is None or own is None:
        raise SystemExit("the failing script was not diagnosed")
    return printed_at - raised_at, own


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        train = Path(folder) / "train_loop.py"
        train.write_text(TRAIN)
        fail = Path(folder) / "fail.py"
        fail.write_text(FAIL)
        plain_cmd = [sys.executable, str(train), str(args.steps)]
        live_cmd = [sys.executable, "-m", "traindoctor", "run", "--", sys.executable, str(train), str(args.steps)]
        plain, live = [], []
        for _ in range(args.repeats):  # interleaved, so load changes hit both alike
            plain.append(_steps_per_sec(plain_cmd))
            live.append(_steps_per_sec(live_cmd))
        delays = [_time_to_diagnosis(fail) for _ in range(args.repeats)]
    plain_median, live_median = statistics.median(plain), statistics.median(live)
    result = {
        "plain_steps_per_sec": [round(x, 1) for x in plain],
        "live_steps_per_sec": [round(x, 1) for x in live],
        "slowdown_percent": round(100 * (1 - live_median / plain_median), 1),
        "exception_to_printed_diagnosis_s": [round(d, 3) for d, _ in delays],
        "stop_to_diagnosis_s": [round(o, 3) for _, o in delays],
    }
    print(json.dumps(result, indent=2))
    ok = result["slowdown_percent"] <= 10 and max(d for d, _ in delays) < 2.0
    print("goals met" if ok else "goals missed: slowdown <= 10 %, diagnosis < 2 s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
