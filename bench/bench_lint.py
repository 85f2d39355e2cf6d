"""Lint speed: traindoctor against TorchFix and Fixit on the same files, in one run.

    make bench            (or: .venv/bin/python bench/bench_lint.py)

Whole tree: `check` of torch.nn + torch.optim + torch.utils.data (real code
nobody here wrote), wall time of each tool's CLI, best of N runs.
Per file: one 1,000-line and one 3,000-line training file, CLI wall time and,
for traindoctor, in-process time (cold cache; and a one-line edit with a warm
cache, the language server's case). Peers come from .venv-bench (see Makefile).
Prints a table with ratios; asserts nothing.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import REPO, torch_subtrees, training_file  # noqa: E402

OURS = [str(REPO / ".venv" / "bin" / "traindoctor"), "check", "--exit-zero", "--format", "json"]
PEER_BIN = REPO / ".venv-bench" / "bin"
PEERS = {
    "torchfix": [str(PEER_BIN / "torchfix")],
    "fixit": [str(PEER_BIN / "fixit"), "lint"],
}
RUNS = 3


def wall(cmd: list[str], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return min(times)


def in_process(source: str) -> tuple[float, float]:
    from traindoctor.config import Config
    from traindoctor.lint import LintCache, lint_source

    cold = []
    for _ in range(RUNS):
        start = time.perf_counter()
        lint_source(source, "bench.py", Config(), LintCache())
        cold.append(time.perf_counter() - start)
    cache = LintCache()
    lint_source(source, "bench.py", Config(), cache)
    lines = source.splitlines(keepends=True)
    target = next(i for i, line in enumerate(lines) if "optimizer.step()" in line and i > len(lines) // 2)
    warm = []
    for edit in range(10):
        lines[target] = lines[target].rstrip("\n") + f"  # edit {edit}\n"
        start = time.perf_counter()
        lint_source("".join(lines), "bench.py", Config(), cache)
        warm.append(time.perf_counter() - start)
    return min(cold), statistics.median(warm)


def main() -> int:
    missing = [name for name, cmd in PEERS.items() if not Path(cmd[0]).exists()]
    if missing:
        print(f"peers missing ({', '.join(missing)}): run `make bench` to create .venv-bench", file=sys.stderr)
        return 2
    # A copy outside any git work tree: Fixit skips git-ignored paths such as a venv.
    scratch = tempfile.TemporaryDirectory()
    tree = []
    for source in torch_subtrees():
        target = Path(scratch.name) / source.name
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        tree.append(str(target))
    files = sum(1 for t in tree for _ in Path(t).rglob("*.py"))
    print(f"whole tree: {files} files copied from torch {', '.join(Path(t).name for t in tree)} (best of {RUNS})")
    ours = wall(OURS + tree)
    rows = [("traindoctor check", ours)]
    for name, cmd in PEERS.items():
        rows.append((name, wall(cmd + tree)))
    for name, seconds in rows:
        print(f"  {name:<20} {seconds:7.2f} s   {seconds / ours:5.1f}x traindoctor")

    with tempfile.TemporaryDirectory() as tmp:
        for size in (1000, 3000):
            path = Path(tmp) / f"train_{size}.py"
            path.write_text(training_file(size))
            cold, warm = in_process(path.read_text())
            print(f"\n{size}-line training file (CLI wall time incl. start-up, best of {RUNS})")
            ours_file = wall(OURS + [str(path)])
            print(f"  {'traindoctor check':<20} {ours_file:7.3f} s")
            for name, cmd in PEERS.items():
                seconds = wall(cmd + [str(path)])
                print(f"  {name:<20} {seconds:7.3f} s   {seconds / ours_file:5.1f}x traindoctor")
            print(f"  traindoctor in-process: cold {cold * 1000:6.1f} ms, one-line edit (warm cache) "
                  f"{warm * 1000:5.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
