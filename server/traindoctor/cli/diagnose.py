"""`traindoctor diagnose [FILE|-] [--format text|json] [--record DIR]`.

Reads a traceback or a whole training log (FILE, or stdin for `-` or no FILE),
in any encoding (undecodable bytes are replaced), and prints the diagnosis:
text (title, `path:line`, root cause, numbered fixes) or one JSON object
(`Diagnosis.to_json()`). `--record DIR` also writes a Markdown debug record.

Exit codes (the one contract of every command): 1 a failure was recognised (any
kind but `other`); 0 nothing recognised (kind `other`: the output still shows the
exception, if any); 2 usage error, unreadable or binary input.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from collections import deque
from pathlib import Path
from typing import BinaryIO

from ..diagnose import diagnose_text, render_text
from ..diagnose.normalize import decode
from ..monitor.curves import diagnose_curves, looks_binary
from . import errors

# Failures are at the end of a log: beyond this, only the tail is read
# (streamed, so a huge log or an endless pipe never sits in memory whole).
_MAX_BYTES = 8 * 1024 * 1024
_CHUNK = 1024 * 1024


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("diagnose", help="explain a crash: traceback or training log -> root cause and fixes")
    parser.add_argument("file", nargs="?", default=None, metavar="FILE", help="log or traceback file; - or none: stdin")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--record", metavar="DIR", help="also write a Markdown debug record into DIR")
    parser.add_argument("--no-correlate", action="store_true", help="do not lint the files on the stack")
    parser.add_argument("--base-dir", metavar="DIR", help="resolve relative paths in the traceback from DIR (default: .)")
    parser.set_defaults(func=run)


class _NotALog(OSError):
    pass


def _read(name: str, limit: int = _MAX_BYTES) -> bytes:
    if name == "-":
        return _tail(sys.stdin.buffer, limit)
    with Path(name).open("rb") as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if stat.S_ISCHR(mode) and not handle.isatty():  # /dev/zero, /dev/urandom: never end
            raise _NotALog("is a device, not a log file")
        if handle.seekable():
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                handle.seek(size - limit)
                return _drop_partial_line(handle.read(limit))
        return _tail(handle, limit)


def _tail(stream: BinaryIO, limit: int) -> bytes:
    """The last `limit` bytes of a stream, holding at most `limit` + one chunk."""
    chunks: deque[bytes] = deque()
    kept = 0
    truncated = False
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            break
        chunks.append(chunk)
        kept += len(chunk)
        while kept - len(chunks[0]) >= limit:
            kept -= len(chunks.popleft())
            truncated = True
    data = b"".join(chunks)
    chunks.clear()
    if len(data) > limit:
        data, truncated = data[-limit:], True
    return _drop_partial_line(data) if truncated else data


def _drop_partial_line(data: bytes) -> bytes:
    """A tail starts mid-line: drop that fragment (unless the tail is one line)."""
    newline = data.find(b"\n")
    return data[newline + 1:] if 0 <= newline < len(data) - 1 else data


def run(args: argparse.Namespace) -> int:
    if args.file is None:
        if sys.stdin is None or sys.stdin.isatty():
            return errors.error("no input: pass a log FILE, or pipe a log into `traindoctor diagnose -`")
        args.file = "-"
    try:
        data = _read(args.file)
    except IsADirectoryError:
        return errors.error(f"{args.file}: is a directory, expected a log file")
    except _NotALog as exc:
        return errors.error(f"{args.file}: {exc}")
    except OSError as exc:
        return errors.error(f"cannot read {args.file}: {exc.strerror or exc}")
    if looks_binary(data):
        return errors.error(f"{args.file}: a binary file, not a training log")
    text = decode(data)
    # Relative frame paths are relative to where the run started: by default the cwd.
    diagnosis = diagnose_text(text, correlate=not args.no_correlate, base_dir=args.base_dir)
    diagnosis = diagnose_curves(text, diagnosis)  # no traceback: the loss curves may still tell
    if args.format == "json":
        sys.stdout.write(json.dumps(diagnosis.to_json(), indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_text(diagnosis))
    if args.record:
        from ..diagnose.record import write_record

        try:
            path = write_record(diagnosis, args.record, source_text=text)
        except OSError as exc:
            return errors.error(f"cannot write the record to {args.record}: {exc.strerror or exc}")
        print(f"traindoctor: record written to {path}", file=sys.stderr)
    # As every command: 1 when something was found (here: a failure recognised), 0 when not.
    return 0 if diagnosis.kind == "other" else 1
