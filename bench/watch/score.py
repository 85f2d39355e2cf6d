"""Score `traindoctor watch` on the silent-failure scripts of bench/watch (README.md there).

    .venv/bin/python bench/watch/score.py --split dev              # one half, one script at a time
    .venv/bin/python bench/watch/score.py --only retained_total_loss,healthy_mlp_classifier
    .venv/bin/python bench/watch/score.py --split test --json out.json
    .venv/bin/python bench/watch/score.py --validate                # the labels and files only

Each case runs as `traindoctor watch --format json -- python cases/<id>.py` in a temporary
folder of its own, with one thread (OMP_NUM_THREADS=1). A case passes when every expected kind is
reported (`a|b`: either one) and every other kind reported is in its `allow` list; a case that
expects nothing passes only with no finding at all.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
LABELS = HERE / "cases.yaml"
CASES = HERE / "cases"
SPLITS = ("dev", "test")
FIELDS = {"id", "mode", "url", "why", "expect", "allow", "split"}
# A case seen on test and then fixed for moves to dev, with the date and the reason (README.md there):
# `moved: "YYYY-MM-DD: why"`. Only that move is allowed, and only with the record.
MOVED = re.compile(r"^\d{4}-\d{2}-\d{2}: \S")
KIND = re.compile(r"^[a-z][a-z0-9-]*$")


class LabelError(ValueError):
    """A label that does not follow the schema of bench/watch/README.md."""


@dataclass(frozen=True)
class Case:
    id: str
    mode: str
    url: str
    why: str
    expect: tuple[frozenset[str], ...]  # each entry: the kinds any one of which satisfies it
    allow: frozenset[str]
    split: str
    moved: str = ""  # the record of a move from test to dev, or ""

    @property
    def script(self) -> Path:
        return CASES / f"{self.id}.py"

    @property
    def quiet(self) -> bool:
        return not self.expect


@dataclass(frozen=True)
class Verdict:
    passed: bool
    missing: tuple[str, ...]  # expected entries not reported, as written in the label ("a|b")
    unexpected: tuple[str, ...]  # reported kinds neither expected nor allowed


def split_of(case_id: str) -> str:
    return "dev" if hashlib.sha256(case_id.encode()).digest()[0] % 2 == 0 else "test"


def _kinds(value: object, field: str, case_id: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise LabelError(f"{case_id}: {field} must be a list of kinds")
    for entry in value:
        if not all(KIND.match(k) for k in entry.split("|")):
            raise LabelError(f"{case_id}: {field} holds {entry!r}, not a kind (lower-case, dashes, `a|b`)")
    return value


def parse_case(raw: dict) -> Case:
    case_id = raw.get("id")
    if not isinstance(case_id, str) or not re.fullmatch(r"[a-z0-9_]+", case_id):
        raise LabelError(f"id must be lower-case letters, digits and _: {case_id!r}")
    if set(raw) - {"moved"} != FIELDS:
        raise LabelError(f"{case_id}: fields must be {sorted(FIELDS)} (and `moved`), not {sorted(raw)}")
    for field in ("mode", "url", "why"):
        if not isinstance(raw[field], str) or not raw[field].strip():
            raise LabelError(f"{case_id}: {field} must be a non-empty string")
    if not raw["url"].startswith("https://"):
        raise LabelError(f"{case_id}: url must be an https:// address")
    expect = _kinds(raw["expect"], "expect", case_id)
    allow = _kinds(raw["allow"], "allow", case_id)
    if any("|" in k for k in allow):
        raise LabelError(f"{case_id}: allow lists single kinds")
    if not expect and allow:
        raise LabelError(f"{case_id}: a case that expects nothing allows nothing")
    moved = raw.get("moved", "")
    if "moved" in raw:
        if not isinstance(moved, str) or not MOVED.match(moved):
            raise LabelError(f"{case_id}: moved must read 'YYYY-MM-DD: the reason', not {moved!r}")
        if (split_of(case_id), raw["split"]) != ("test", "dev"):
            raise LabelError(f"{case_id}: only a test case moves, to dev (the hash puts it in "
                             f"{split_of(case_id)!r}, the label in {raw['split']!r})")
    elif raw["split"] != split_of(case_id):
        raise LabelError(f"{case_id}: split is {raw['split']!r}, the hash puts it in {split_of(case_id)!r}")
    return Case(case_id, raw["mode"], raw["url"], raw["why"].strip(),
                tuple(frozenset(e.split("|")) for e in expect), frozenset(allow), raw["split"], moved)


def load_cases(path: Path = LABELS) -> list[Case]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    cases = [parse_case(raw) for raw in document["cases"]]
    ids = [c.id for c in cases]
    if len(set(ids)) != len(ids):
        raise LabelError("duplicate ids: " + ", ".join(sorted({i for i in ids if ids.count(i) > 1})))
    return cases


def judge(case: Case, reported: list[str]) -> Verdict:
    kinds = set(reported)
    missing = tuple("|".join(sorted(entry)) for entry in case.expect if not entry & kinds)
    known = set().union(*case.expect) | case.allow if case.expect else set()
    unexpected = tuple(sorted(kinds - known))
    return Verdict(not missing and not unexpected, missing, unexpected)


def watch(case: Case, timeout: float) -> tuple[list[str] | None, str, float]:
    """The kinds `watch` reports on the case's script, or None with the reason when it gave no JSON."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("TRAINDOCTOR_MONITOR", None)
    command = [sys.executable, "-m", "traindoctor", "watch", "--format", "json", "--",
               sys.executable, str(case.script)]
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"watch-{case.id}-") as folder:
        try:
            done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, f"no answer in {timeout:.0f} s", time.monotonic() - start
    elapsed = time.monotonic() - start
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    try:
        payload = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"exit {done.returncode}, no JSON: {tail[:160]}", elapsed
    return [f["kind"] for f in payload.get("findings", [])], "", elapsed


def rates(rows: list[dict]) -> dict[str, tuple[int, int]]:
    out = {}
    for split in SPLITS:
        part = [r for r in rows if r["split"] == split]
        if part:
            out[split] = (sum(r["passed"] for r in part), len(part))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=SPLITS)
    parser.add_argument("--only", help="comma-separated case ids")
    parser.add_argument("--json", type=Path, help="write the per-case results here")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds per case")
    parser.add_argument("--validate", action="store_true", help="check the labels and the scripts, run nothing")
    args = parser.parse_args(argv)
    try:
        cases = load_cases()
    except LabelError as error:
        print(f"score.py: {error}", file=sys.stderr)
        return 2
    absent = [c.id for c in cases if not c.script.is_file()]
    extra = sorted({p.stem for p in CASES.glob("*.py")} - {c.id for c in cases})
    if absent or extra:
        print(f"score.py: labels without a script: {absent}; scripts without a label: {extra}", file=sys.stderr)
        return 2
    if args.validate:
        print(f"{len(cases)} cases: " + ", ".join(f"{s} {n}" for s, (_, n) in
                                                  rates([{"split": c.split, "passed": 0} for c in cases]).items()))
        return 0
    if args.split:
        cases = [c for c in cases if c.split == args.split]
    if args.only:
        wanted = set(args.only.split(","))
        cases = [c for c in cases if c.id in wanted]
    rows = []
    print(f"{'case':32} {'split':5} {'expect':36} {'reported':44} result")
    for case in cases:  # one at a time: the machine is shared
        reported, error, elapsed = watch(case, args.timeout)
        verdict = judge(case, reported or []) if reported is not None else Verdict(False, (), ())
        expect = ", ".join("|".join(sorted(e)) for e in case.expect) or "(nothing)"
        shown = error or (", ".join(reported) if reported else "(nothing)")
        result = "pass" if verdict.passed else "FAIL" + (
            f" missing {', '.join(verdict.missing)}" if verdict.missing else "") + (
            f" unexpected {', '.join(verdict.unexpected)}" if verdict.unexpected else "")
        print(f"{case.id:32} {case.split:5} {expect:36} {shown:44} {result} ({elapsed:.0f} s)", flush=True)
        rows.append({"id": case.id, "split": case.split, "moved": case.moved, "mode": case.mode,
                     "reported": reported, "error": error,
                     "passed": verdict.passed, "missing": list(verdict.missing),
                     "unexpected": list(verdict.unexpected), "seconds": round(elapsed, 1)})
    for split, (passed, total) in rates(rows).items():
        print(f"{split}: {passed} of {total} pass ({passed / total:.2f})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
