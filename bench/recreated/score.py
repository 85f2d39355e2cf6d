"""Recall and precision of the lint on programs re-created from public bug reports
(bench/recreated/README.md says how a case is made and labelled).

    .venv/bin/python bench/recreated/score.py                    # both halves, per rule
    .venv/bin/python bench/recreated/score.py --split dev        # the dev half only
    .venv/bin/python bench/recreated/score.py --json out.json --only r001,r002
    .venv/bin/python bench/recreated/score.py --validate         # check labels.yaml and the case files only

Each case is a pair: cases/<id>_bug.py (the user's program, bug kept) and cases/<id>_fixed.py (the
fix the thread gives). Every file is linted alone, in a temporary folder of its own, with
`traindoctor check --format json --select strict`, so no case sees another one.

Recall: a _bug file is found when a finding of the labelled rule is within NEAR lines of a
labelled line (for a bug of absence, a missing call, anywhere in the innermost function around
the labelled line, or the module when there is none).
Precision, per rule: true = _bug files with such a hit; false = _fixed files with any finding of
that rule (the fix removed the bug, so a finding there is wrong). Findings of the labelled rule on
a _bug file away from the labelled lines count as neither: they may be other, real bugs.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LABELS = HERE / "labels.yaml"
CASES = HERE / "cases"
NEAR = 3
FIELDS = {"id", "url", "rule", "lines", "absence", "code", "reason", "split"}
CODE_KINDS = ("posted", "quoted", "linked")  # how much of the program the thread itself shows
SPLITS = ("dev", "test")


class LabelError(ValueError):
    """A label that does not follow the schema of bench/recreated/README.md."""


@dataclass(frozen=True)
class Case:
    id: str
    url: str
    rule: str
    lines: tuple[int, ...]
    absence: bool
    code: str
    reason: str
    split: str


def split_of(url: str) -> str:
    """dev when the first byte of sha256(url) is even, else test: fixed before any case is scored."""
    return "dev" if hashlib.sha256(url.encode("utf-8")).digest()[0] % 2 == 0 else "test"


def parse_case(raw: object, known_rules: set[str] | None = None) -> Case:
    if not isinstance(raw, dict):
        raise LabelError(f"a label must be a mapping, not {type(raw).__name__}")
    where = str(raw.get("id", "?"))
    missing, extra = FIELDS - raw.keys(), raw.keys() - FIELDS
    if missing:
        raise LabelError(f"{where}: missing {', '.join(sorted(missing))}")
    if extra:
        raise LabelError(f"{where}: unknown field(s) {', '.join(sorted(extra))}")
    if not isinstance(raw["id"], str) or not re.match(r"^[a-z0-9_]+$", raw["id"]):
        raise LabelError(f"{where}: id must be lower-case letters, digits or _")
    if not isinstance(raw["url"], str) or not raw["url"].startswith("https://"):
        raise LabelError(f"{where}: url must be an https address")
    if not isinstance(raw["rule"], str) or not re.match(r"^TRN\d{3}$", raw["rule"]):
        raise LabelError(f"{where}: rule must be a code like TRN101")
    if known_rules is not None and raw["rule"] not in known_rules:
        raise LabelError(f"{where}: no rule {raw['rule']} in rules/lint/")
    lines = raw["lines"]
    if not isinstance(lines, list) or not lines or not all(
            isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in lines):
        raise LabelError(f"{where}: lines must be a non-empty list of positive line numbers")
    if not isinstance(raw["absence"], bool):
        raise LabelError(f"{where}: absence must be true or false")
    if raw["code"] not in CODE_KINDS:
        raise LabelError(f"{where}: code must be one of {', '.join(CODE_KINDS)}")
    if not isinstance(raw["reason"], str) or not raw["reason"].strip():
        raise LabelError(f"{where}: reason must be a non-empty string")
    if raw["split"] != split_of(raw["url"]):
        raise LabelError(f"{where}: split is {raw['split']!r}, but the URL's hash puts it in {split_of(raw['url'])!r}")
    return Case(raw["id"], raw["url"], raw["rule"], tuple(lines), raw["absence"], raw["code"], raw["reason"],
                raw["split"])


def known_rule_codes() -> set[str]:
    return {p.stem for p in (ROOT / "rules" / "lint").glob("TRN*.yaml")}


def load_cases(path: Path = LABELS, cases_dir: Path | None = CASES,
               known_rules: set[str] | None = None) -> list[Case]:
    """Parse labels.yaml; ids and URLs unique; with cases_dir, both files exist and every line is in the _bug file."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    if not isinstance(raw, list):
        raise LabelError(f"{path}: the file must be a YAML list of labels")
    cases = [parse_case(item, known_rules) for item in raw]
    for key in ("id", "url"):
        seen: set[str] = set()
        for case in cases:
            value = getattr(case, key)
            if value in seen:
                raise LabelError(f"{case.id}: {key} {value} is used by another case")
            seen.add(value)
    if cases_dir is not None:
        for case in cases:
            bug, fixed = cases_dir / f"{case.id}_bug.py", cases_dir / f"{case.id}_fixed.py"
            for f in (bug, fixed):
                if not f.is_file():
                    raise LabelError(f"{case.id}: no file {f.name}")
            n = len(bug.read_text(encoding="utf-8").splitlines())
            if max(case.lines) > n:
                raise LabelError(f"{case.id}: line {max(case.lines)} is past the end of {bug.name} ({n} lines)")
        labelled = {f"{c.id}_{kind}.py" for c in cases for kind in ("bug", "fixed")}
        unlabelled = sorted(p.name for p in cases_dir.glob("*.py") if p.name not in labelled)
        if unlabelled:
            raise LabelError(f"case files without a label: {', '.join(unlabelled)}")
    return cases


# ---- matching (pure) -------------------------------------------------------------------------

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def enclosing_function(source: str, line: int) -> tuple[int, int]:
    """First and last line of the innermost function around `line` (decorators included);
    the whole module when there is none, or when the source does not parse."""
    whole = (1, max(1, len(source.splitlines())))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return whole
    best = whole
    for node in ast.walk(tree):
        if isinstance(node, _FUNCTIONS):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            end = node.end_lineno or node.lineno
            if start <= line <= end and end - start < best[1] - best[0]:
                best = (start, end)
    return best


def is_hit(case: Case, finding: dict, source: str) -> bool:
    """A finding of the labelled rule that counts as finding the labelled bug in the _bug file."""
    if finding["code"] != case.rule:
        return False
    if case.absence:
        return any(start <= finding["line"] <= end
                   for start, end in (enclosing_function(source, line) for line in case.lines))
    first, last = finding["line"], finding.get("end_line") or finding["line"]
    return any(first - NEAR <= line <= last + NEAR for line in case.lines)


@dataclass
class Outcome:
    case: Case
    found: bool            # a hit on the _bug file
    false_on_fixed: int    # findings of the labelled rule on the _fixed file
    bug_findings: list     # every finding on the _bug file (for the report)
    fixed_findings: list   # every finding on the _fixed file


def judge(case: Case, bug_findings: list[dict], bug_source: str, fixed_findings: list[dict]) -> Outcome:
    return Outcome(case,
                   any(is_hit(case, f, bug_source) for f in bug_findings),
                   sum(1 for f in fixed_findings if f["code"] == case.rule),
                   bug_findings, fixed_findings)


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 3) if den else None


def _cell(outcomes: list[Outcome]) -> dict:
    cases = len(outcomes)
    found = sum(o.found for o in outcomes)
    false = sum(1 for o in outcomes if o.false_on_fixed)
    return {"cases": cases, "found": found, "false_on_fixed": false,
            "recall": _ratio(found, cases), "precision": _ratio(found, found + false)}


def tally(outcomes: list[Outcome]) -> dict:
    """Recall and precision per half, per rule within each half, and over all cases."""
    out: dict = {"all": _cell(outcomes), "splits": {},
                 "code": {kind: _cell([o for o in outcomes if o.case.code == kind]) for kind in CODE_KINDS}}
    for split in SPLITS:
        mine = [o for o in outcomes if o.case.split == split]
        rules: dict[str, list[Outcome]] = defaultdict(list)
        for o in mine:
            rules[o.case.rule].append(o)
        out["splits"][split] = {"total": _cell(mine), "rules": {r: _cell(rules[r]) for r in sorted(rules)}}
    return out


def format_table(result: dict) -> str:
    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    rows = []
    for split, part in result["splits"].items():
        t = part["total"]
        rows.append(f"{split}: {t['cases']} cases, recall {fmt(t['recall'])} ({t['found']}/{t['cases']}), "
                    f"precision {fmt(t['precision'])} ({t['found']} true, {t['false_on_fixed']} false on fixed)")
        for rule, c in part["rules"].items():
            rows.append(f"  {rule}  {c['cases']:3d}  recall {fmt(c['recall']):>4}  precision {fmt(c['precision']):>4}"
                        f"  ({c['found']} found, {c['false_on_fixed']} false)")
    a = result["all"]
    rows.append(f"all: {a['cases']} cases, recall {fmt(a['recall'])}, precision {fmt(a['precision'])}")
    rows.append("by how much code the thread shows: " + ", ".join(
        f"{kind} {c['cases']} recall {fmt(c['recall'])}" for kind, c in result.get("code", {}).items()))
    return "\n".join(rows)


# ---- running the linter ------------------------------------------------------------------------

def lint_alone(path: Path) -> list[dict]:
    """The findings of `traindoctor check --select strict` on one file, copied into an empty folder."""
    with tempfile.TemporaryDirectory(prefix="recreated-") as tmp:
        copy = Path(tmp) / path.name
        shutil.copyfile(path, copy)
        proc = subprocess.run([sys.executable, "-m", "traindoctor", "check", "--format", "json", "--exit-zero",
                               "--select", "strict", "--jobs", "1", copy.name],
                              cwd=tmp, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"traindoctor check failed on {path.name} ({proc.returncode}): {proc.stderr.strip()[-300:]}")
    return [{"code": f["code"], "line": f["line"], "end_line": f.get("end_line", f["line"]),
             "message": f["message"][:200]} for f in json.loads(proc.stdout or "[]")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "test", "all"), default="all")
    ap.add_argument("--only", help="comma-separated case ids")
    ap.add_argument("--json", help="write the per-case outcomes and the tally here")
    ap.add_argument("--validate", action="store_true", help="check labels.yaml and the case files, lint nothing")
    args = ap.parse_args(argv)
    try:
        cases = load_cases(known_rules=known_rule_codes())
    except LabelError as err:
        print(f"bench/recreated/labels.yaml: {err}", file=sys.stderr)
        return 2
    if args.validate:
        print(f"{len(cases)} cases: labels and files are well-formed")
        return 0
    if args.split != "all":
        cases = [c for c in cases if c.split == args.split]
    if args.only:
        wanted = set(args.only.split(","))
        cases = [c for c in cases if c.id in wanted]
    outcomes = []
    for case in cases:
        bug, fixed = CASES / f"{case.id}_bug.py", CASES / f"{case.id}_fixed.py"
        outcomes.append(judge(case, lint_alone(bug), bug.read_text(encoding="utf-8"), lint_alone(fixed)))
    result = tally(outcomes)
    print(format_table(result))
    if args.json:
        Path(args.json).write_text(json.dumps({
            "tally": result,
            "cases": [{"id": o.case.id, "rule": o.case.rule, "split": o.case.split, "code": o.case.code,
                       "found": o.found,
                       "false_on_fixed": o.false_on_fixed, "bug_findings": o.bug_findings,
                       "fixed_findings": o.fixed_findings} for o in outcomes],
        }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
