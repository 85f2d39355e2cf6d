"""The overhead benchmarks run (their numbers are in the README; timings are never asserted).
They import the monitor the way `watch` loads it, so a change there could break them unseen."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _run(script: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(done.stdout)


def test_the_paired_watch_overhead_bench_runs():
    output = _run("bench_watch_overhead.py", "--pairs", "10", "--repeats", "0")
    assert set(output["paired"]) == {"default", "per-layer"}
    assert "wall_slowdown_percent" in output["paired"]["default"]


def test_the_two_rank_overhead_bench_runs():
    output = _run("bench_dist_overhead.py", "--pairs", "10")
    assert {"rank 0", "rank 1"} <= set(output)
    assert "cpu_slowdown_percent" in output["rank 1"]
