"""Loss curves from any log: plain text, CSV, JSONL (watch's records too) and TensorBoard events.

`read_curves(paths) -> RunData` (source "curves"): one Series per metric,
steps from the log where it says (`step 120`, a `step` column or key), else
the point's position. Plain text understands `loss: 0.31`, `loss=nan`,
`Loss nan (nan)`, tqdm postfixes (`loss=0.31, lr=1e-3`), Hugging Face Trainer's
dict lines (`{'loss': 0.31, 'learning_rate': 5e-05, 'epoch': 0.1}`) and
Lightning's progress lines (`train_loss=0.31, val_loss=0.5`).
"""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any, Iterable

from .series import RunData, Series, role_of, to_float

# Lightning's progress bar writes a non-finite value as `nan.0` / `inf.0` (`train_loss_step=nan.0`).
_NUMBER = r"(?:(?:nan|NaN|NAN|[-+]?inf(?:inity)?|[-+]?Inf)(?:\.0)?|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
_METRIC = re.compile(
    r"(?<![\w.])(?P<key>(?:(?:train|training|val|valid|validation|eval|test)[ _/-])?(?:[a-z_]*loss[a-z_]*|lr|learning[ _]rate|grad[ _]norm))"
    r"\]?(?:\s*[:=]\s*|\s+)(?P<value>" + _NUMBER + r")(?![\w.])",
    re.IGNORECASE,
)
_STEP = re.compile(r"(?i)\b(global[_ ]step|step|iteration|iter)\b\]?\s*[:=#]?\s*(\d+)")  # `[step] 104` too
_EPOCH = re.compile(r"(?i)\b(epoch)\b\s*[:=#]?\s*(\d+)\b")
_DICT = re.compile(r"\{[^{}]*\}")
_BARE_NONFINITE = re.compile(r"(?<![\w'\"])(-?(?:nan|inf))(?![\w'\"])")
_STEP_KEYS = ("step", "global_step", "iteration", "iter", "_step", "trainer/global_step")
_MAX_BYTES = 64 * 1024 * 1024


# traindoctor's own output, when a log captured it: its summary and error lines, then the findings
# it rendered below them (monitor/findings.py render_finding: a title, then indented lines).
_OWN_LINE = re.compile(r"traindoctor(?: [a-z]+)?: ")


class CurvesError(ValueError):
    """A file that cannot be read as a training log (one line for the user)."""


def _key(name: str) -> str:
    return re.sub(r"[ ]+", "_", name.strip().lower())


class _Collector:
    def __init__(self) -> None:
        self.points: dict[str, list[tuple[int, float, int]]] = {}
        self.x_names: dict[str, str] = {}  # per series: the name of what its steps count

    def add(self, name: str, step: int | None, value: float, line: int = 0, x_name: str = "step") -> None:
        points = self.points.setdefault(name, [])
        if step is None:
            step, x_name = (points[-1][0] + 1 if points else 1), "point"
        self.x_names.setdefault(name, x_name)
        points.append((step, value, line))

    def series(self, suffix: str = "") -> dict[str, Series]:
        out = {}
        for name, points in self.points.items():
            if role_of(name) == "other" and name not in ("accuracy", "acc"):
                continue
            x_name = self.x_names.get(name, "step")
            if x_name == "epoch" and any(b[0] <= a[0] for a, b in zip(points, points[1:])):
                # several values per epoch (a progress bar's): the epoch does not tell them apart
                points, x_name = [(i, v, line) for i, (_, v, line) in enumerate(points, 1)], "point"
            out[name + suffix] = Series(name + suffix, tuple(p[0] for p in points), tuple(p[1] for p in points),
                                        tuple(p[2] for p in points), x_name=x_name)
        return out


def parse_text(text: str) -> dict[str, Series]:
    collector = _Collector()
    ours = False
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        # traindoctor's own report in a log (`watch ... 2>&1 | tee train.log`) is not the run's data:
        # its `traindoctor: ...` lines and the findings rendered under them (a title line followed
        # by indented lines).
        if _OWN_LINE.match(line):
            ours = True
            continue
        if ours and (line.startswith("  ") or (number < len(lines) and lines[number].startswith("  "))):
            continue
        ours = False
        found_dict = False
        for match in _DICT.finditer(line):
            try:
                data = ast.literal_eval(_BARE_NONFINITE.sub(r"'\1'", match.group(0)))
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                continue
            if isinstance(data, dict):
                found_dict |= _add_mapping(collector, data, number)
        if found_dict:
            continue
        step_match = _STEP.search(line) or _EPOCH.search(line)
        step = int(step_match.group(2)) if step_match else None
        x_name = _key(step_match.group(1)) if step_match else "point"
        for match in _METRIC.finditer(line):
            value = to_float(match.group("value").removesuffix(".0"))  # `nan.0`; a number keeps its value
            if value is not None:
                collector.add(_key(match.group("key")), step, value, number, x_name)
    return collector.series()


def _x_of(data: dict[str, Any]) -> tuple[int | None, str]:
    """The step of a record and the name of its column: a step key, else a whole-number epoch."""
    for key in (*_STEP_KEYS, "epoch"):
        value = data.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
                and (key != "epoch" or float(value).is_integer()):
            return int(value), key
    return None, "point"


def _add_mapping(collector: _Collector, data: dict[str, Any], line: int = 0) -> bool:
    step, x_name = _x_of(data)
    added = False
    for key, raw in data.items():
        if key in _STEP_KEYS or key in ("epoch", "time", "timestamp", "wall_time"):
            continue
        if isinstance(raw, list) and raw:
            raw = raw[0]  # watch writes one lr per parameter group
        value = to_float(raw)
        if value is None:
            continue
        name = _key(str(key))
        if role_of(name) == "other":
            continue
        collector.add(name, step, value, line, x_name)
        added = True
    return added


def parse_jsonl(text: str) -> dict[str, Series]:
    collector = _Collector()
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            _add_mapping(collector, data, number)
    return collector.series()


def parse_csv(text: str) -> dict[str, Series]:
    collector = _Collector()
    reader = csv.DictReader(io.StringIO(text))
    for number, row in enumerate(reader, 2):
        data = {k.strip(): (to_float(v) if v not in (None, "") else None) for k, v in row.items() if k}
        step, x_name = _x_of(data)
        for key, value in data.items():
            if value is None or key in _STEP_KEYS or key in ("epoch", "time", "timestamp", "wall_time"):
                continue
            if role_of(_key(key)) != "other":
                collector.add(_key(key), step, value, number, x_name)
    return collector.series()


def parse_tensorboard(path: Path) -> dict[str, Series]:
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        raise CurvesError(f"{path}: reading TensorBoard files needs the `tensorboard` package "
                          "(pip install 'traindoctor[tensorboard]')") from None
    accumulator = EventAccumulator(str(path), size_guidance={"scalars": 0})
    try:
        accumulator.Reload()
    except Exception as exc:  # a corrupt or foreign file
        raise CurvesError(f"{path}: not a readable TensorBoard event file ({type(exc).__name__}: {exc})") from None
    out = {}
    for tag in accumulator.Tags().get("scalars", []):
        events = accumulator.Scalars(tag)
        if role_of(tag) == "other":
            continue
        out[tag] = Series(tag, tuple(int(e.step) for e in events), tuple(float(e.value) for e in events))
    return out


def _is_tensorboard(path: Path) -> bool:
    if path.is_dir():
        return any(p.name.startswith("events.out.tfevents") for p in path.rglob("events.out.tfevents*"))
    return path.name.startswith("events.out.tfevents")


def looks_binary(data: bytes) -> bool:
    """A NUL byte near the start: an image, a checkpoint, an archive; no log has one."""
    return b"\x00" in data[:4096]


def read_file(path: Path) -> dict[str, Series]:
    if not path.exists():
        raise CurvesError(f"{path}: no such file")
    if _is_tensorboard(path):
        return parse_tensorboard(path)
    if path.is_dir():
        raise CurvesError(f"{path}: a directory without TensorBoard event files")
    try:
        data = path.read_bytes()[-_MAX_BYTES:]
    except OSError as exc:
        raise CurvesError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if looks_binary(data):
        raise CurvesError(f"{path}: a binary file, not a training log")
    text = data.decode("utf-8", errors="replace")
    return parse_content(text, path.suffix.lower())


def parse_content(text: str, suffix: str = "") -> dict[str, Series]:
    first = next((line for line in text.splitlines() if line.strip()), "")
    if suffix == ".csv" or (suffix not in (".jsonl", ".log", ".txt") and "," in first
                            and not first.lstrip().startswith("{") and _looks_like_header(first)):
        found = parse_csv(text)
        if found or suffix == ".csv":
            return found
    if suffix in (".jsonl", ".ndjson") or first.lstrip().startswith("{\""):
        found = parse_jsonl(text)
        if found:
            return found
    return parse_text(text)


# A CSV column name: `loss`, `train/loss`, `val acc (%)`; not a progress line's `20.1it/s, loss=0.3]`.
_COLUMN_NAME = re.compile(r"[A-Za-z_][\w ./()%-]{0,63}")


def _looks_like_header(line: str) -> bool:
    cells = [c.strip().strip('"') for c in line.split(",")]
    return len(cells) >= 2 and all(_COLUMN_NAME.fullmatch(c) for c in cells)


def read_curves(paths: Iterable[str | Path]) -> RunData:
    series: dict[str, Series] = {}
    files = []
    paths = [Path(p) for p in paths]
    for path in paths:
        found = read_file(path)
        files.append(str(path))
        for name, one in found.items():
            if name in series:  # the same metric in two files: keep both
                name = f"{name} ({path.name})"
            series[name] = Series(name, one.steps, one.values, one.lines, str(path), one.x_name)
    return RunData("curves", series, files=tuple(files))


_NAN_FAMILY = ("nan-onset", "divergence", "gradient-explosion", "loss-spike")


def diagnose_curves(text: str, diagnosis: Any) -> Any:
    """For `diagnose`: a log without a traceback may still show a NaN, a divergence or a plateau.

    Returns the first curve finding's Diagnosis (every finding in details["curve_findings"]), or
    `diagnosis` unchanged when it recognised a failure or the log has no curves.
    """
    details = getattr(diagnosis, "details", None) or {}
    # A kind inferred from partial evidence (loose log lines, a traceback cut before its message) gives
    # way to a NaN the curves show: a NaN inferred is refined by its onset, a guess from frames outranked.
    # (Not amp: a NaN loss is what an FP16 overflow shows, and the loss-scale lines said which.)
    refinable = str(details.get("signature", "")).startswith("partial:") and getattr(diagnosis, "kind", "") != "amp"
    if (getattr(diagnosis, "kind", "other") != "other" and not refinable) \
            or getattr(diagnosis, "exception", None) is not None:
        return diagnosis
    import dataclasses

    from .findings import detect

    try:
        series = parse_content(text)
        if not series:
            return diagnosis
        findings = detect(RunData("curves", series), "curves")
    except Exception:  # the curves reader must never break `diagnose`
        return diagnosis
    if not findings:
        return diagnosis
    first = findings[0]
    if refinable and first.diagnosis.kind not in (_NAN_FAMILY if diagnosis.kind == "nan-inf" else ("nan-onset",)):
        return diagnosis
    details = dict(first.diagnosis.details)
    details["curve_findings"] = [f.to_json() for f in findings]
    from ..diagnose.engine import with_references

    found = dataclasses.replace(first.diagnosis, details=details)
    if refinable and found.location is None and diagnosis.location is not None:
        found = dataclasses.replace(found, location=diagnosis.location)  # the traceback the log printed still says where
    return with_references(found)
