"""diagnose reads a bounded tail, streamed, and is linear in traceback fragments."""

from __future__ import annotations

import io
import os
import subprocess
import sys

from reliability_helpers import PYTHON, env

from traindoctor.cli import diagnose as diagnose_cli
from traindoctor.diagnose import diagnose_text

FRAGMENT = (
    "Traceback (most recent call last):\n"
    '  File "/opt/job/train.py", line {n}, in step\n'
    "    loss.backward()\n"
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 MiB\n"
    "epoch 1 step {n} loss 0.5\n"
    "epoch 1 step {n} loss 0.4\n"
)
FATAL = (
    "Traceback (most recent call last):\n"
    '  File "/opt/job/train.py", line 9, in <module>\n'
    "    model(x)\n"
    "RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x20 and 30x5)\n"
)


class _Counting(io.RawIOBase):
    """A stream of `total` bytes of filler that remembers the largest read asked of it."""

    def __init__(self, total: int, tail: bytes) -> None:
        self.left, self.tail, self.largest = total, tail, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        self.largest = max(self.largest, size)
        assert size > 0, "read everything at once"
        if self.left > 0:
            n = min(size, self.left)
            self.left -= n
            return (b"noise line\n" * (n // 11 + 1))[:n]
        out, self.tail = self.tail[:size], self.tail[size:]
        return out


def test_the_stdin_tail_is_streamed_in_chunks_and_bounded():
    stream = _Counting(40 << 20, FATAL.encode())
    data = diagnose_cli._tail(stream, 1 << 20)
    assert len(data) <= 1 << 20
    assert data.endswith(FATAL.encode())
    assert not data.startswith(b"oise")  # starts on a line boundary
    assert stream.largest <= diagnose_cli._CHUNK


def test_a_file_larger_than_the_limit_is_read_from_its_tail(tmp_path):
    path = tmp_path / "big.log"
    with path.open("wb") as handle:
        handle.write(b"x" * (3 << 20) + b"\n")
        handle.write(FATAL.encode())
    data = diagnose_cli._read(str(path), limit=1 << 20)
    assert len(data) <= 1 << 20 and data.endswith(FATAL.encode())


def test_a_fifo_is_streamed(tmp_path):
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen([sys.executable, "-c", f"open({str(fifo)!r}, 'w').write({FATAL!r} * 3)"])
    try:
        data = diagnose_cli._read(str(fifo), limit=1 << 20)
    finally:
        writer.wait(30)
    assert data == (FATAL * 3).encode()


def test_a_log_dense_with_fragments_is_diagnosed_and_the_last_failure_wins():
    # 4,000 tracebacks, each followed by progress (handled) and the fatal one at the end.
    log = "".join(FRAGMENT.format(n=n) for n in range(4000)) + FATAL
    diagnosis = diagnose_text(log, correlate=False)
    assert diagnosis.kind == "shape-mismatch", diagnosis.title


def test_stdin_larger_than_the_limit_goes_through_the_real_cli():
    # 40 MB through a pipe, more than the tail kept: the fatal traceback at the end is found.
    script = (
        "import sys\n"
        "block = b'2024-05-02 INFO step 1 loss 0.5\\n' * 32768\n"
        "for _ in range(40): sys.stdout.buffer.write(block)\n"
        f"sys.stdout.buffer.write({FATAL.encode()!r})\n"
    )
    producer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    done = subprocess.run([PYTHON, "-m", "traindoctor", "diagnose", "-", "--no-correlate", "--format", "json"],
                          stdin=producer.stdout, capture_output=True, text=True, timeout=120, env=env())
    producer.wait(30)
    assert done.returncode == 1, done.stderr
    assert '"kind": "shape-mismatch"' in done.stdout


def test_a_device_that_never_ends_is_refused_with_one_line():
    done = subprocess.run([PYTHON, "-m", "traindoctor", "diagnose", "/dev/zero", "--no-correlate"],
                          capture_output=True, text=True, timeout=60, env=env())
    assert done.returncode == 2
    assert done.stderr.strip() == "traindoctor diagnose: /dev/zero: is a device, not a log file"
