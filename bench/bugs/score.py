"""Recall of the lint on real bug-fix commits (bench/bugs/README.md says how a case is labelled).

    .venv/bin/python bench/bugs/score.py                       # every bench/bugs/labels/*.yaml
    .venv/bin/python bench/bugs/score.py --labels '/work/wt/bugs-*/bench/bugs/labels/*.yaml'
    .venv/bin/python bench/bugs/score.py --validate            # check the labels' schema only
    .venv/bin/python bench/bugs/score.py --json out.json --only a001,a002

Each label names a fix commit, its parent, a file and the buggy lines in the parent. The
repositories come from the git snapshots that the session tool `fetch` brings to
/work/.mirror/owner+name/ (a script cannot fetch; missing ones are listed). Both commits are
extracted (their Python, pyproject.toml and torch-pin files) into a cache outside this repository
(TRAINDOCTOR_BUGS_CACHE, default /work/bugs-cache), and `traindoctor check --select strict`
runs with its working directory at the repository root on the labelled file and the Python
files of its package (its folder and the folder above, at most MAX_FILES), so the project's
config and cross-file facts count.
Findings are cached per (repository, commit, files, hash of server/ + rules/).

A hit is a finding of the labelled rule within NEAR lines of a labelled line; for a bug of
absence (a missing call) anywhere in the smallest loop or function around the labelled line.
Quiet-after: the fix commit no longer has a finding of that rule on the same code (the same
stripped line text; for absence, the same enclosing function).
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import functools
import glob
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
LABELS = ROOT / "bench" / "bugs" / "labels" / "*.yaml"
MIRRORS = Path(os.environ.get("TRAINDOCTOR_MIRRORS", "/work/.mirror"))
CACHE = Path(os.environ.get("TRAINDOCTOR_BUGS_CACHE", "/work/bugs-cache"))
NEAR = 3
MAX_FILES = 300
MAX_PER_REPO = 8
FIELDS = {"id", "repo", "fix", "parent", "path", "lines", "rule", "absence", "reason", "found_by"}
SHA = re.compile(r"^[0-9a-f]{40}$")
REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


class LabelError(ValueError):
    """A label that does not follow the schema of bench/bugs/README.md."""


@dataclass(frozen=True)
class Label:
    id: str
    repo: str
    fix: str
    parent: str
    path: str
    lines: tuple[int, ...]
    rule: str
    absence: bool
    reason: str
    found_by: str
    source: str = ""  # the labels file

    @property
    def slug(self) -> str:
        return self.repo.replace("/", "+")


def parse_label(raw: object, known_rules: set[str] | None = None, source: str = "") -> Label:
    if not isinstance(raw, dict):
        raise LabelError(f"{source}: a label must be a mapping, not {type(raw).__name__}")
    where = f"{source}: {raw.get('id', '?')}"
    missing = FIELDS - raw.keys()
    extra = raw.keys() - FIELDS
    if missing:
        raise LabelError(f"{where}: missing {', '.join(sorted(missing))}")
    if extra:
        raise LabelError(f"{where}: unknown field(s) {', '.join(sorted(extra))}")
    if not isinstance(raw["id"], str) or not raw["id"]:
        raise LabelError(f"{where}: id must be a non-empty string")
    if not isinstance(raw["repo"], str) or not REPO.match(raw["repo"]):
        raise LabelError(f"{where}: repo must be owner/name")
    for key in ("fix", "parent"):
        if not isinstance(raw[key], str) or not SHA.match(raw[key]):
            raise LabelError(f"{where}: {key} must be a 40-hex commit")
    if raw["fix"] == raw["parent"]:
        raise LabelError(f"{where}: fix and parent are the same commit")
    if not isinstance(raw["path"], str) or not raw["path"] or raw["path"].startswith("/"):
        raise LabelError(f"{where}: path must be relative to the repository root")
    lines = raw["lines"]
    if not isinstance(lines, list) or not lines or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in lines):
        raise LabelError(f"{where}: lines must be a non-empty list of positive line numbers")
    if not isinstance(raw["rule"], str) or not re.match(r"^TRN\d{3}$", raw["rule"]):
        raise LabelError(f"{where}: rule must be a code like TRN101")
    if known_rules is not None and raw["rule"] not in known_rules:
        raise LabelError(f"{where}: no rule {raw['rule']} in rules/lint/")
    if not isinstance(raw["absence"], bool):
        raise LabelError(f"{where}: absence must be true or false")
    for key in ("reason", "found_by"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise LabelError(f"{where}: {key} must be a non-empty string")
    return Label(raw["id"], raw["repo"], raw["fix"], raw["parent"], raw["path"], tuple(lines), raw["rule"],
                 raw["absence"], raw["reason"], raw["found_by"], source)


def known_rule_codes() -> set[str]:
    return {p.stem for p in (ROOT / "rules" / "lint").glob("TRN*.yaml")}


@functools.cache
def counted_codes(rule: str) -> frozenset[str]:
    """The labelled rule and every rule split from it since (`split_from` in rules/lint/): a label written
    before a split names the class that the split-off rule now reports (TRN407, BCE on sigmoid outputs, was
    TRN402's until 2026-12-04, after the b labels were written)."""
    found = {rule}
    for path in (ROOT / "rules" / "lint").glob("TRN*.yaml"):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if data.get("split_from") == rule:
            found.add(path.stem)
    return frozenset(found)


def load_labels(patterns: list[str], known_rules: set[str] | None = None) -> list[Label]:
    files = sorted({f for pattern in patterns for f in glob.glob(pattern)})
    if not files:
        raise LabelError(f"no label files match {', '.join(patterns)}")
    labels = []
    for name in files:
        raw = yaml.safe_load(Path(name).read_text(encoding="utf-8")) or []
        if not isinstance(raw, list):
            raise LabelError(f"{name}: the file must be a YAML list of labels")
        labels.extend(parse_label(item, known_rules, name) for item in raw)
    check_set(labels)
    return labels


def check_set(labels: list[Label]) -> None:
    """The rules across all files: unique ids, one case per (fix, path, rule, lines), <= 8 commits a repository."""
    seen: dict[str, str] = {}
    cases: set[tuple] = set()
    commits: dict[str, set[str]] = defaultdict(set)
    for label in labels:
        if label.id in seen:
            raise LabelError(f"{label.source}: id {label.id} is also in {seen[label.id]}")
        seen[label.id] = label.source
        key = (label.repo, label.fix, label.path, label.rule, label.lines)
        if key in cases:
            raise LabelError(f"{label.source}: {label.id} duplicates another label")
        cases.add(key)
        commits[label.repo.lower()].add(label.fix)
    for repo, fixes in commits.items():
        if len(fixes) > MAX_PER_REPO:
            raise LabelError(f"{repo}: {len(fixes)} fix commits, at most {MAX_PER_REPO} from one repository")


# ---- matching (pure) -------------------------------------------------------------------------

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.For, ast.AsyncFor, ast.While)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def enclosing_scope(source: str, line: int) -> tuple[int, int]:
    """The first and last line of the smallest loop or function that contains `line`
    (the whole module when none does, or when the file does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 1, max(1, len(source.splitlines()))
    best = (1, max(1, len(source.splitlines())))
    for node in ast.walk(tree):
        if isinstance(node, _SCOPES):
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            end = node.end_lineno or node.lineno
            if start <= line <= end and end - start < best[1] - best[0]:
                best = (start, end)
    return best


def enclosing_function(source: str, line: int) -> str:
    """The qualified name of the innermost function around `line` ("<module>" outside any)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return "<module>"
    found = "<module>"

    def visit(node: ast.AST, prefix: str) -> None:
        nonlocal found
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (*_FUNCTIONS, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if child.lineno <= line <= (child.end_lineno or child.lineno):
                    if isinstance(child, _FUNCTIONS):
                        found = name
                    visit(child, name + ".")
                    return
            elif hasattr(child, "body") or isinstance(child, ast.stmt):
                if getattr(child, "lineno", 0) <= line <= (getattr(child, "end_lineno", 0) or 0):
                    visit(child, prefix)
                    return

    visit(tree, "")
    return found


def hit_findings(label: Label, findings: list[dict], source: str) -> list[dict]:
    """The findings of the labelled rule in the labelled file that count as finding the bug."""
    own = [f for f in findings if f["code"] in counted_codes(label.rule) and f["path"] == label.path]
    if label.absence:
        scopes = [enclosing_scope(source, line) for line in label.lines]
        return [f for f in own if any(start <= f["line"] <= end for start, end in scopes)]
    return [f for f in own
            if any(f["line"] - NEAR <= line <= f.get("end_line", f["line"]) + NEAR for line in label.lines)]


def line_text(source: str, line: int) -> str:
    lines = source.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def quiet_after(label: Label, hits: list[dict], parent_source: str, fix_findings: list[dict],
                fix_source: str, fix_path: str) -> bool:
    """True when none of the hit findings is still reported on the fix commit's version of the code."""
    after = [f for f in fix_findings if f["code"] in counted_codes(label.rule) and f["path"] == fix_path]
    if label.absence:
        names = {enclosing_function(parent_source, f["line"]) for f in hits}
        return not any(enclosing_function(fix_source, f["line"]) in names for f in after)
    texts = {line_text(parent_source, f["line"]) for f in hits}
    return not any(line_text(fix_source, f["line"]) in texts for f in after)


def near_findings(label: Label, findings: list[dict], source: str) -> list[dict]:
    """Every finding (any rule) in the labelled file near the labelled lines, for the report."""
    if label.absence:
        scopes = [enclosing_scope(source, line) for line in label.lines]
        keep = lambda n: any(s <= n <= e for s, e in scopes)  # noqa: E731
    else:
        keep = lambda n: any(abs(n - line) <= NEAR for line in label.lines)  # noqa: E731
    return [{"code": f["code"], "line": f["line"], "message": f["message"][:160]}
            for f in findings if f["path"] == label.path and keep(f["line"])]


def half_of(repo: str) -> str:
    """The benchmark's half of a repository: `dev` (rules may be tuned on its misses) or `test`
    (reported, never tuned on). By repository, so that one project's idioms never sit in both."""
    return "test" if hashlib.sha256(repo.encode()).digest()[0] % 2 else "dev"


def _count(cases: list[dict]) -> dict[str, int]:
    return {"labelled": len(cases), "hits": sum(bool(c["hit"]) for c in cases),
            "quiet_after": sum(bool(c["quiet_after"]) for c in cases)}


def tally(cases: list[dict]) -> dict:
    rules: dict[str, dict[str, int]] = {}
    for case in cases:
        row = rules.setdefault(case["rule"], {"labelled": 0, "hits": 0, "quiet_after": 0})
        row["labelled"] += 1
        row["hits"] += bool(case["hit"])
        row["quiet_after"] += bool(case["quiet_after"])
    overall = {"labelled": sum(r["labelled"] for r in rules.values()),
               "hits": sum(r["hits"] for r in rules.values()),
               "quiet_after": sum(r["quiet_after"] for r in rules.values())}
    halves = {half: _count([c for c in cases if half_of(c["repo"]) == half]) for half in ("dev", "test")}
    return {"rules": dict(sorted(rules.items())), "overall": overall, "halves": halves, "cases": cases}


def format_table(result: dict) -> list[str]:
    def row(name: str, r: dict) -> str:
        recall = f"{r['hits'] / r['labelled']:.2f}" if r["labelled"] else "-"
        quiet = f"{r['quiet_after']}/{r['hits']}" if r["hits"] else "-"
        return f"| {name} | {r['labelled']} | {r['hits']} | {recall} | {quiet} |"
    out = ["| rule | labelled | hits | recall | quiet after fix |", "| --- | ---: | ---: | ---: | ---: |"]
    out += [row(code, r) for code, r in result["rules"].items()]
    out.append(row("**all**", result["overall"]))
    out += [row(f"*{half} half*", counts) for half, counts in result.get("halves", {}).items()]
    return out


# ---- extraction and linting --------------------------------------------------------------------

def git_dir(repo: str) -> Path | None:
    base = MIRRORS / repo.replace("/", "+") / "repo"
    for candidate in (base / ".git", base):
        if (candidate / "HEAD").is_file():
            return candidate
    return None


def git(gd: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", f"--git-dir={gd}", *args], input=data, check=True,
                          capture_output=True, timeout=900).stdout


# What the linter reads of a tree: the Python sources, the configuration files that hold a
# [tool.traindoctor] table, and the files where a project pins its torch version (what
# lint/analysis/environment.py reads: without them a version claim is made for our torch, not the
# project's). The rest (data, notebooks, weights) would only cost disk.
EXTRACTED = ("*.py", "*.pyi", "*pyproject.toml", "*requirements*.txt", "*setup.cfg", "*environment.yml",
             "*environment.yaml")
# Trees and findings are cached under a name that changes with EXTRACTED, so that a tree extracted
# with fewer files is never linted again as if it were whole.
EXTRACTION = hashlib.sha256("\0".join(EXTRACTED).encode()).hexdigest()[:8]


def extract(gd: Path, commit: str, dest: Path) -> Path:
    """The tree at `commit` under dest (kept for later runs), restricted to EXTRACTED. A snapshot
    may lack its largest blobs; then the tree is written blob by blob without them."""
    done = dest / ".extracted"
    if done.is_file():
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    try:
        tarfile.open(fileobj=io.BytesIO(git(gd, "archive", "--format=tar", commit, "--", *EXTRACTED))).extractall(
            dest, filter="data")
    except (subprocess.CalledProcessError, tarfile.TarError):
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        listing = git(gd, "ls-tree", "-r", "-z", commit).decode("utf-8", "replace")
        blobs = [(meta.split()[2], path) for meta, path in (e.split("\t", 1) for e in listing.split("\0") if e)
                 if meta.split()[1] == "blob" and any(fnmatch.fnmatch(path, p) for p in EXTRACTED)]
        batch = git(gd, "cat-file", "--batch", data="".join(f"{sha}\n" for sha, _ in blobs).encode())
        offset = 0
        for _, path in blobs:
            end = batch.index(b"\n", offset)
            header = batch[offset:end].split()
            if header[1] == b"missing":
                offset = end + 1
                continue
            length = int(header[2])
            target = dest / path
            if target.resolve().is_relative_to(dest.resolve()):
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(batch[end + 1:end + 1 + length])
            offset = end + 1 + length + 1
    done.write_text(commit)
    return dest


def package_files(root: Path, path: str, limit: int = MAX_FILES) -> list[str]:
    """The labelled file, then the Python files of its folder, then those under the folder above."""
    folder = Path(path).parent
    above = folder.parent if folder != Path(".") else folder
    chosen = [path] if (root / path).is_file() else []
    same = sorted(p.relative_to(root).as_posix() for p in (root / folder).glob("*.py"))
    wider = sorted((p.relative_to(root).as_posix() for p in (root / above).rglob("*.py")),
                   key=lambda p: (p.count("/"), p))
    for candidate in same + wider:
        if len(chosen) >= limit:
            break
        if candidate not in chosen and (root / candidate).is_file():
            chosen.append(candidate)
    return chosen


def tool_hash() -> str:
    digest = hashlib.sha256()
    for top in ("server", "rules"):
        for p in sorted((ROOT / top).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc" and ".egg-info" not in str(p):
                digest.update(p.relative_to(ROOT).as_posix().encode() + b"\0" + p.read_bytes())
    return digest.hexdigest()[:16]


def lint(root: Path, files: list[str], key: Path, jobs: int) -> list[dict]:
    if key.is_file():
        return json.loads(key.read_text())
    proc = subprocess.run([sys.executable, "-m", "traindoctor", "check", "--format", "json", "--exit-zero",
                           "--select", "strict", "--jobs", str(jobs), *files],
                          cwd=root, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"traindoctor check failed ({proc.returncode}): {proc.stderr.strip()[-300:]}")
    # The key names the code the run started with; findings of code edited since (a merge, a
    # rule being tuned in this checkout) must not be cached, or scored, under that name.
    if tool_hash() not in key.name:
        raise SystemExit("score.py: traindoctor's server/ or rules/ changed during the run; "
                         "score a checkout nobody edits (a git worktree at the commit)")
    findings = [{"code": f["code"], "path": Path(f["path"]).as_posix().removeprefix("./"), "line": f["line"],
                 "end_line": f.get("end_line", f["line"]), "message": f["message"]}
                for f in json.loads(proc.stdout or "[]")]
    key.parent.mkdir(parents=True, exist_ok=True)
    key.write_text(json.dumps(findings))
    return findings


def renamed_path(gd: Path, label: Label) -> str | None:
    """The labelled file's path at the fix commit (None when the fix deleted it)."""
    out = git(gd, "diff", "--name-status", "-M", "-z", label.parent, label.fix, "--", ).decode("utf-8", "replace")
    parts = out.split("\0")
    i = 0
    while i < len(parts) - 1:
        status = parts[i]
        if status.startswith(("R", "C")):
            old, new = parts[i + 1], parts[i + 2]
            if old == label.path and status.startswith("R"):
                return new
            i += 3
        else:
            if parts[i + 1] == label.path and status.startswith("D"):
                return None
            i += 2
    return label.path


def score_case(label: Label, tool: str, jobs: int) -> dict:
    case: dict = {"id": label.id, "rule": label.rule, "repo": label.repo, "path": label.path,
                  "lines": list(label.lines), "absence": label.absence, "hit": False, "quiet_after": False,
                  "findings": [], "error": None}
    gd = git_dir(label.repo)
    if gd is None:
        case["error"] = "repository not fetched"
        return case
    try:
        parent_root = extract(gd, label.parent, CACHE / f"src-{EXTRACTION}" / label.slug / label.parent)
        files = package_files(parent_root, label.path)
        if label.path not in files:
            raise RuntimeError(f"{label.path} is not in the parent commit")
        fkey = hashlib.sha256("\0".join(files).encode()).hexdigest()[:12]
        findings = lint(parent_root, files, CACHE / f"results-{EXTRACTION}" / label.slug / f"{label.parent}-{tool}-{fkey}.json", jobs)
        source = (parent_root / label.path).read_text(encoding="utf-8-sig", errors="replace")
        hits = hit_findings(label, findings, source)
        case["hit"] = bool(hits)
        case["findings"] = near_findings(label, findings, source)
        if hits:
            fix_path = renamed_path(gd, label)
            if fix_path is None:
                case["quiet_after"] = True
            else:
                fix_root = extract(gd, label.fix, CACHE / f"src-{EXTRACTION}" / label.slug / label.fix)
                fix_files = package_files(fix_root, fix_path)
                gkey = hashlib.sha256("\0".join(fix_files).encode()).hexdigest()[:12]
                after = lint(fix_root, fix_files, CACHE / f"results-{EXTRACTION}" / label.slug / f"{label.fix}-{tool}-{gkey}.json", jobs)
                fix_source = (fix_root / fix_path).read_text(encoding="utf-8-sig", errors="replace") \
                    if (fix_root / fix_path).is_file() else ""
                case["quiet_after"] = quiet_after(label, hits, source, after, fix_source, fix_path)
    except (RuntimeError, subprocess.SubprocessError, OSError, ValueError) as exc:
        case["error"] = str(exc)[:300]
    return case


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", action="append", help=f"label files (glob, repeatable; default {LABELS})")
    parser.add_argument("--only", help="comma-separated label ids")
    parser.add_argument("--json", type=Path, help="write rules/overall/cases as JSON here")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--half", choices=("dev", "test"), help="score one half only (tune on dev; open test once)")
    parser.add_argument("--validate", action="store_true", help="check the labels and the mirrors, lint nothing")
    parser.add_argument("--prepare", action="store_true", help="only extract the parent and fix trees into the cache")
    args = parser.parse_args(argv)
    try:
        labels = load_labels(args.labels or [str(LABELS)], known_rule_codes())
    except (LabelError, yaml.YAMLError) as exc:
        print(f"bad labels: {exc}", file=sys.stderr)
        return 2
    if args.only:
        wanted = set(args.only.split(","))
        labels = [label for label in labels if label.id in wanted]
    if args.half:
        labels = [label for label in labels if half_of(label.repo) == args.half]
    missing = sorted({label.repo for label in labels if git_dir(label.repo) is None})
    print(f"{len(labels)} labels, {len({label.repo for label in labels})} repositories, "
          f"{len({label.rule for label in labels})} rules", file=sys.stderr)
    if missing:
        print(f"not fetched ({len(missing)}); bring them with the session tool `fetch`:", file=sys.stderr)
        for repo in missing:
            print(f"  fetch github:{repo}", file=sys.stderr)
    if args.validate:
        return 1 if missing else 0
    if args.prepare:
        for label in labels:
            gd = git_dir(label.repo)
            if gd is not None:
                for commit in (label.parent, label.fix):
                    try:
                        extract(gd, commit, CACHE / f"src-{EXTRACTION}" / label.slug / commit)
                    except (subprocess.SubprocessError, OSError) as exc:
                        print(f"{label.id}: {commit[:10]} not extracted: {exc}", file=sys.stderr)
        return 0
    tool = tool_hash()
    cases = []
    for n, label in enumerate(labels, 1):
        case = score_case(label, tool, args.jobs)
        status = "error: " + case["error"] if case["error"] else ("hit" if case["hit"] else "miss")
        print(f"[{n}/{len(labels)}] {label.id} {label.rule} {label.repo} {label.path}: {status}", file=sys.stderr)
        cases.append(case)
    result = tally(cases)
    print("\n".join(format_table(result)))
    errors = [c for c in cases if c["error"]]
    if errors:
        print(f"\n{len(errors)} case(s) could not be scored (counted as misses): "
              + ", ".join(f"{c['id']} ({c['error']})" for c in errors))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
