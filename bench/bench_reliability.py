"""Benchmark: the worst inputs stay fast and small (issue 14).

Goals: a 50 MB log dense with traceback fragments diagnoses in < 10 s; 1 GB
piped into `traindoctor diagnose -` keeps peak RSS < 500 MB; a 2 MB Python file lints
in < 10 s. Four kinds of 2 MB file: real PyTorch code (torch's own sources, concatenated);
dense training code with findings (this repository's example training scripts, repeated;
at 1 MB too, to show the time is linear); and files of top-level one-line statements:
50,000 torch expressions (25,000 and 10,000 too, to show the time is linear) and 122,000
`x_00001 = 1` lines. Each case runs the real CLI in a subprocess; peak RSS is the child's
ru_maxrss. Each `check` is set against the peer any libcst-based linter has, libcst's bare
parse of the same file, run right after it (CPU seconds, and their ratio).
Run:  .venv/bin/python bench/bench_reliability.py [--only NAME]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-m", "traindoctor"]
FRAGMENT = (
    "Traceback (most recent call last):\n"
    '  File "/opt/job/train.py", line {n}, in step\n'
    "    loss.backward()\n"
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 MiB\n"
    "epoch 1 step {n} loss 0.5\n"
)


def dense_log(size: int) -> bytes:
    """Traceback fragments back to back, some cut short, with progress lines between."""
    out, total, n = [], 0, 0
    while total < size:
        n += 1
        piece = FRAGMENT.format(n=n)
        if n % 3 == 0:
            piece = piece[: len(piece) // 2] + "\n"  # a fragment interleaved by another rank
        data = piece.encode()
        out.append(data)
        total += len(data)
    return b"".join(out)


def python_file(statements: int) -> str:
    head = "import torch\nimport torch.nn as nn\n"
    body = [f"value_{i:05d} = torch.zeros({i % 7 + 1}) * {i:05d}.0" for i in range(statements)]
    return head + "\n".join(body) + "\n"


def int_statements(size: int) -> str:
    """`x_00001 = 1` lines up to `size` bytes, after an `import torch`."""
    lines, total, n = ["import torch\n"], 13, 0
    while total + 16 <= size:
        lines.append(f"x_{n:05d} = {n}\n")
        total, n = total + len(lines[-1]), n + 1
    return "".join(lines)


def repeated_examples(size: int) -> str:
    """examples/*.py back to back, repeated up to `size` bytes: dense training code with
    findings, in which every function, class and module-level object recurs."""
    root = Path(__file__).resolve().parents[1] / "examples"
    one = "".join(text if text.endswith("\n") else text + "\n"
                  for text in (p.read_text() for p in sorted(root.glob("*.py"))))
    return one * (size // len(one.encode()))


def real_torch_code(size: int) -> str:
    """Whole .py files of the installed torch that mention torch, in path order, up to `size`
    bytes: real code with classes, functions and long statements, the same for one torch version."""
    import importlib.util

    # Found, not imported: the CLI children are forked from this process, and a child's peak
    # RSS counts what it inherited before exec (torch would add 200 MB to every row).
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None, "torch is not installed"
    root = Path(spec.origin).parent
    chunks, total = [], 0
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "torch" not in text or total + len(text.encode()) + 1 > size:
            continue
        chunks.append(text if text.endswith("\n") else text + "\n")
        total += len(chunks[-1].encode())
        if total > size - 20_000:
            break
    return "".join(chunks)


# The floor of any libcst-based linter, run on the same file in the same moment: the
# machine's speed drifts (this VM by ±30 % within an hour), the ratio to it much less.
PARSE_ONLY = [sys.executable, "-c", "import sys, libcst; libcst.parse_module(open(sys.argv[1]).read())"]


def run_cli(args: list[str], *, stdin_bytes: int = 0, stdin_data: bytes | None = None,
            timeout: float = 600, command: list[str] = CLI) -> tuple[float, float, int, float]:
    """(wall seconds, peak RSS in MB, exit code, CPU seconds) of one run of the CLI
    (or of `command`) with `args`."""
    start = time.perf_counter()
    proc = subprocess.Popen(command + args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None
    try:
        if stdin_data is not None:
            proc.stdin.write(stdin_data)
        block = dense_log(1 << 20)
        sent = 0
        while sent < stdin_bytes:
            proc.stdin.write(block)
            sent += len(block)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            return float("inf"), usage.ru_maxrss / 1024, -9, usage.ru_utime + usage.ru_stime
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - start, usage.ru_maxrss / 1024, proc.returncode, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("log", "stdin", "random", "lint"), action="append")
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    only = set(args.only or ("log", "stdin", "random", "lint"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if "log" in only:
            log = folder / "dense.log"
            log.write_bytes(dense_log(50 << 20))
            seconds, rss, code, cpu = run_cli(["diagnose", str(log), "--no-correlate"], timeout=args.timeout)
            rows.append(("diagnose: 50 MB log of traceback fragments (file)", seconds, cpu, rss, code, "< 10 s"))
            seconds, rss, code, cpu = run_cli(["diagnose", "-", "--no-correlate"], stdin_data=log.read_bytes(),
                                         timeout=args.timeout)
            rows.append(("diagnose: the same 50 MB on stdin", seconds, cpu, rss, code, "< 10 s"))
        if "stdin" in only:
            seconds, rss, code, cpu = run_cli(["diagnose", "-", "--no-correlate"], stdin_bytes=1 << 30,
                                         timeout=args.timeout)
            rows.append(("diagnose: 1 GB piped into stdin", seconds, cpu, rss, code, "< 500 MB RSS"))
        if "random" in only:
            noise = random.Random(14).randbytes(50 << 20)
            seconds, rss, code, cpu = run_cli(["diagnose", "-", "--no-correlate"], stdin_data=noise,
                                         timeout=args.timeout)
            rows.append(("diagnose: 50 MB of random bytes on stdin", seconds, cpu, rss, code, "< 500 MB RSS"))
        if "lint" in only:
            cases = [("real torch code", real_torch_code(1_990_000), "< 10 s"),
                     ("the example training scripts, repeated", repeated_examples(2_000_000), "< 10 s"),
                     ("the example training scripts, repeated", repeated_examples(1_000_000), "")]
            # the three sizes of one-liners show whether the time is linear in the file
            cases += [(f"{n:,} one-line statements", python_file(n), "< 10 s" if n == 50_000 else "")
                      for n in (50_000, 25_000, 10_000)]
            cases.append(("`x_00001 = 1` lines", int_statements(2_000_000), "< 10 s"))
            for index, (label, source, goal) in enumerate(cases):
                path = folder / f"big_{index}.py"
                path.write_text(source)
                seconds, rss, code, cpu = run_cli(["check", str(path)], timeout=args.timeout)
                _, _, parse_code, parse_cpu = run_cli([str(path)], command=PARSE_ONLY, timeout=args.timeout)
                size = len(source.encode()) / 1e6
                ratio = f"{cpu / parse_cpu:.1f}× libcst's parse ({parse_cpu:.1f} s)" if parse_code == 0 else ""
                rows.append((f"check: {label} ({size:.2f} MB)", seconds, cpu, rss, code, goal, ratio))
    width = max(len(r[0]) for r in rows)
    # CPU seconds are the fair number on a loaded machine; wall seconds what a user waits.
    print(f"{'case':<{width}}  {'wall s':>8}  {'CPU s':>7}  {'peak RSS':>9}  exit  {'goal':<12}  CPU against the peer")
    for name, seconds, cpu, rss, code, goal, *peer in rows:
        shown = "timeout" if seconds == float("inf") else f"{seconds:8.2f}"
        print(f"{name:<{width}}  {shown:>8}  {cpu:7.2f}  {rss:7.0f} MB  {code:>4}  {goal:<12}  {''.join(peer)}")


if __name__ == "__main__":
    main()
