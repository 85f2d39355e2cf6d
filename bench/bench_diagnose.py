"""Benchmark: diagnose a 10,000-line training log (goal: under 100 ms) and a 1,000,000-line one
(goal: under 2 s, linear).

The log is realistic noise around a failure: timestamped logging lines, tqdm
carriage-return redraws, rank prefixes, ANSI colours, a handled traceback early
on and the fatal one near the end. Run:  .venv/bin/python bench/bench_diagnose.py
`--scaling 10000,100000,1000000` prints, per size, the best of `--runs` wall and CPU
times, the time per line and the lines the normaliser read (only the regions around
failure anchors and the tail: see traindoctor/diagnose/anchors.py).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from traindoctor.diagnose import diagnose_text
from traindoctor.diagnose.normalize import normalize

ROOT = Path(__file__).resolve().parents[1]
FATAL = (ROOT / "tests" / "diagnose" / "data" / "formats" / "ranks_oom_fragmentation.log").read_text()
HANDLED = (ROOT / "tests" / "diagnose" / "data" / "formats" / "multiple_tracebacks.log").read_text()


def make_log(lines: int) -> str:
    out: list[str] = []
    step = 0
    while len(out) < lines - 40:
        step += 1
        kind = step % 5
        if kind == 0:
            bar = "\r".join(f"Epoch {step // 100}: {p:3d}%|####| {p}/100 [00:0{p % 10}<00:01, 9.{p % 10}it/s]"
                            for p in range(0, 100, 20))
            out.append(bar)
        elif kind == 1:
            out.append(f"2024-05-02 09:{step % 60:02d}:{step % 60:02d},{step % 1000:03d} INFO train step={step} "
                       f"loss={1 / (step + 1):.4f} lr=3.0e-04 grad_norm=0.{step % 97:02d}")
        elif kind == 2:
            out.append(f"[rank{step % 4}]:[I1202 10:{step % 60:02d}:00.000000 ProcessGroupNCCL.cpp:{step}] "
                       f"[Rank {step % 4}] ProcessGroupNCCL broadcast unique ID through store took 0.{step} ms")
        elif kind == 3:
            out.append(f"\x1b[32m[metrics]\x1b[0m step {step}: acc=0.{step % 1000:03d} f1=0.{step % 777:03d}")
        else:
            out.append(f"W1202 10:00:{step % 60:02d}.000000 {1000 + step} torch/_dynamo/x.py:{step}] recompiling")
        if step == 500:
            out.extend(HANDLED.splitlines()[:6])
    out.extend(FATAL.splitlines())
    return "\n".join(out[:lines]) + "\n"


def _curves_scaling(sizes: list[int]) -> None:
    from traindoctor.monitor.curves import diagnose_curves

    print(f"{'lines':>9}  {'diagnose CPU ms':>15}  {'curves CPU ms':>13}  {'us/line':>7}  kind")
    for size in sizes:
        noise = [line for line in make_log(size).split("\n")[:-len(FATAL.splitlines()) - 1]
                 if not line.startswith((" ", "Traceback")) and "Error" not in line]
        # a first line with commas (a tqdm bar) would be read as a CSV header
        log = "\n".join(["training started", *noise] + [f"step={size} loss=nan"] * 5) + "\n"
        start = time.process_time()
        diagnosis = diagnose_text(log, correlate=False)
        middle = time.process_time()
        diagnosis = diagnose_curves(log, diagnosis)
        end = time.process_time()
        print(f"{size:>9}  {(middle - start) * 1000:15.1f}  {(end - middle) * 1000:13.1f}  "
              f"{(end - middle) * 1e6 / size:7.2f}  {diagnosis.kind}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--scaling", metavar="N,N,...", help="wall and CPU time per line at these sizes "
                        "(linearity check), e.g. 10000,100000,1000000")
    parser.add_argument("--runs", type=int, default=3, help="with --scaling: runs per size, the best is shown")
    parser.add_argument("--curves", action="store_true", help="with --scaling: also time the loss-curve fallback "
                        "(`diagnose` reads the curves of a log without a traceback) on the same noise, no traceback")
    args = parser.parse_args()
    if args.scaling:
        print(f"{'lines':>9}  {'MiB':>6}  {'wall ms':>8}  {'CPU ms':>8}  {'us/line':>7}  {'normalised':>10}  kind")
        for size in (int(n) for n in args.scaling.split(",")):
            log = make_log(size)
            diagnosis = diagnose_text(log, correlate=False)  # warm-up: loads and compiles the signatures
            wall, cpu = [], []
            for _ in range(args.runs):
                start, start_cpu = time.perf_counter(), time.process_time()
                diagnosis = diagnose_text(log, correlate=False)
                wall.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
            print(f"{size:>9}  {len(log) / 2**20:6.1f}  {min(wall) * 1000:8.1f}  {min(cpu) * 1000:8.1f}  "
                  f"{min(cpu) * 1e6 / size:7.2f}  {len(normalize(log)):>10}  {diagnosis.kind}")
        print(f"best of {args.runs} runs; goal: 1,000,000 lines under 2 s")
        if args.curves:
            _curves_scaling([int(n) for n in args.scaling.split(",")])
        return
    log = make_log(args.lines)
    diagnosis = diagnose_text(log, correlate=False)  # warm-up: loads and compiles the signatures
    assert diagnosis.kind == "cuda-oom", diagnosis.title
    timings, cpu = [], []
    for _ in range(args.repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        diagnose_text(log, correlate=False)
        timings.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    print(f"diagnose {log.count(chr(10))} lines ({len(log) / 1024:.0f} KiB): "
          f"median {statistics.median(timings):.1f} ms, best {min(timings):.1f} ms, worst {max(timings):.1f} ms; "
          f"CPU time median {statistics.median(cpu):.1f} ms (wall time suffers on a loaded machine; goal < 100 ms) -> {diagnosis.kind}, rank {diagnosis.rank}, {diagnosis.location.path}:{diagnosis.location.line}")


if __name__ == "__main__":
    main()
