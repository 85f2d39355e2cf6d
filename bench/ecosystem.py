"""Ecosystem check, like Ruff's: lint public repositories, compare with hand-judged verdicts.

    .venv/bin/python bench/ecosystem.py extract        # sources of bench/ecosystem/repos.yaml -> --src
    .venv/bin/python bench/ecosystem.py run            # lint them, print precision per rule
    .venv/bin/python bench/ecosystem.py run --half test --select strict --jobs 2 --json test.json
    .venv/bin/python bench/ecosystem.py run --stubs new.yaml   # also write unjudged findings as stubs
    .venv/bin/python bench/ecosystem.py run --from-json saved.json  # re-score saved findings (`run --json`)
    .venv/bin/python bench/ecosystem.py fixcheck [--unsafe-fixes]  # --fix on a copy; parse + pyflakes
    .venv/bin/python bench/ecosystem.py fixcheck --per-rule --from-json saved.json --json fixes.json

The repositories and their pins are in `bench/ecosystem/repos.yaml`: a commit of a
git snapshot (source: mirror), a PyPI sdist's version and sha256 for a repository whose
snapshot is too large but whose package part is published (source: pypi), or a
manifest of files read one by one from the stored GitHub index, each with its commit
and sha256 (source: index; `extract` verifies them and says how to re-create them).
Each repository is in the dev half (rules may be tuned on it) or the test half (never
tuned on); see bench/ecosystem/README.md for the policy and the moves between them.
The sources are extracted OUTSIDE this repository (default /work/eco-src), never
committed. Every finding is judged by hand in `bench/ecosystem/verdicts.yaml`:
tp (a real bug a strict reviewer would fix), fp, or debatable. Precision per rule
is tp / judged: a debatable finding is not a hit. Findings without a verdict are
printed in full so they can be judged; they do not count towards precision.

A verdict is matched to a finding by repository, path, code and the text of the
flagged line, so it survives unrelated edits that move the line; the recorded
line number only picks the nearest one among identical lines. This is a
measurement, not a CI test (CI has no network); its pure logic is unit-tested in
tests/bench/test_ecosystem.py.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
REPOS_FILE = HERE / "ecosystem" / "repos.yaml"
VERDICTS_FILE = HERE / "ecosystem" / "verdicts.yaml"
DEFAULT_SRC = Path(os.environ.get("TRAINDOCTOR_ECO_SRC", "/work/eco-src"))
MIRRORS = Path(os.environ.get("TRAINDOCTOR_ECO_MIRRORS", "/work/.mirror"))
VERDICTS = ("tp", "fp", "debatable")
HALVES = ("dev", "test")


# --- pure logic (unit-tested) ---------------------------------------------------


@dataclass(frozen=True)
class Hit:
    """One finding of the linter, reduced to what a verdict is matched on."""

    repo: str
    path: str  # relative to the repository root, '/'-separated
    line: int  # 1-based
    code: str
    text: str  # the flagged line, stripped
    message: str = ""
    column: int = 1


@dataclass(frozen=True)
class Verdict:
    repo: str
    path: str
    line: int
    code: str
    text: str
    verdict: str  # tp | fp | debatable
    reason: str
    column: int = 0  # optional: tells apart two findings of one rule on one line (0: any column)

    @staticmethod
    def from_dict(raw: dict) -> "Verdict":
        verdict = str(raw["verdict"])
        if verdict not in VERDICTS:
            raise ValueError(f"{raw.get('path')}:{raw.get('line')}: verdict must be one of {VERDICTS}, not {verdict!r}")
        return Verdict(str(raw["repo"]), str(raw["path"]), int(raw["line"]), str(raw["code"]),
                       normalize(str(raw.get("text", ""))), verdict, str(raw.get("reason", "")),
                       int(raw.get("column", 0)))


def normalize(text: str) -> str:
    """The flagged line as matched: indentation and inner runs of spaces do not count."""
    return " ".join(text.split())


def match(hits: list[Hit], verdicts: list[Verdict]) -> tuple[list[tuple[Hit, Verdict | None]], list[Verdict]]:
    """Pair each hit with at most one verdict; return the pairs and the verdicts left over.

    Same repo, path, code and line text are required. Among several candidates
    (the same line text occurs more than once) the nearest recorded line wins, an
    exact line first. A verdict without text (hand-written) matches on the line.
    """
    pool: dict[tuple[str, str, str], list[Verdict]] = defaultdict(list)
    for v in verdicts:
        pool[(v.repo, v.path, v.code)].append(v)
    paired: dict[int, Verdict] = {}
    # Pass 1 exact line + text, pass 2 text only (the line moved), pass 3 line only
    # for verdicts without text.
    for pass_no in (1, 2, 3):
        for i, hit in enumerate(hits):
            if i in paired:
                continue
            candidates = pool.get((hit.repo, hit.path, hit.code), [])
            norm = normalize(hit.text)
            if pass_no == 1:
                fits = [v for v in candidates if v.line == hit.line and v.text == norm]
            elif pass_no == 2:
                fits = [v for v in candidates if v.text == norm]
            else:
                fits = [v for v in candidates if not v.text and v.line == hit.line]
            fits = [v for v in fits if not v.column or v.column == hit.column]
            if fits:
                best = min(fits, key=lambda v: abs(v.line - hit.line))
                candidates.remove(best)
                paired[i] = best
    leftover = [v for vs in pool.values() for v in vs]
    return [(hit, paired.get(i)) for i, hit in enumerate(hits)], leftover


@dataclass
class RuleScore:
    tp: int = 0
    fp: int = 0
    debatable: int = 0
    unjudged: int = 0

    @property
    def findings(self) -> int:
        return self.tp + self.fp + self.debatable + self.unjudged

    @property
    def judged(self) -> int:
        return self.tp + self.fp + self.debatable

    @property
    def precision(self) -> float | None:
        """tp over judged findings; a debatable finding is not a hit. None when nothing is judged."""
        return self.tp / self.judged if self.judged else None


def score(pairs: list[tuple[Hit, Verdict | None]]) -> dict[str, RuleScore]:
    table: dict[str, RuleScore] = defaultdict(RuleScore)
    for hit, verdict in pairs:
        entry = table[hit.code]
        if verdict is None:
            entry.unjudged += 1
        else:
            setattr(entry, verdict.verdict, getattr(entry, verdict.verdict) + 1)
    return dict(sorted(table.items()))


def total(table: dict[str, RuleScore]) -> RuleScore:
    out = RuleScore()
    for entry in table.values():
        out.tp += entry.tp
        out.fp += entry.fp
        out.debatable += entry.debatable
        out.unjudged += entry.unjudged
    return out


def rule_sets(table: dict[str, RuleScore]) -> list[tuple[str, RuleScore]]:
    """The totals the README reports: `default` (the rules `check` runs unless told otherwise) and
    `strict` (every rule); TRN000 (a file that cannot be linted) is in neither."""
    from traindoctor.catalog import load_rules  # the installed engine's catalog, read only here

    rules = load_rules()
    linted = {code: e for code, e in table.items() if code != "TRN000"}
    default = {code: e for code, e in linted.items() if code in rules and rules[code].rule_set == "default"}
    return [("default", total(default)), ("strict", total(linted))]


def format_table(table: dict[str, RuleScore]) -> list[str]:
    rows = [f"{'rule':8} {'findings':>8} {'tp':>4} {'fp':>4} {'deb':>4} {'new':>4} {'precision':>9}"]
    for code, e in [*table.items(), ("all", total(table)), *rule_sets(table)]:
        p = "-" if e.precision is None else f"{e.precision:.3f}"
        rows.append(f"{code:8} {e.findings:>8} {e.tp:>4} {e.fp:>4} {e.debatable:>4} {e.unjudged:>4} {p:>9}")
    return rows


# --- repositories and sources ---------------------------------------------------


@dataclass(frozen=True)
class Repo:
    name: str  # owner/name
    source: str  # mirror | pypi | index | missing
    commit: str = ""
    subdir: str = ""
    note: str = ""
    markdown: bool = False  # also lint the PyTorch code cells of its Markdown notebooks (d2l)
    package: str = ""  # pypi: the distribution name
    version: str = ""  # pypi: the pinned version
    sha256: str = ""  # pypi: the sdist's sha256
    manifest: str = ""  # index: the manifest of files read from the stored GitHub index
    half: str = ""  # dev | test

    @property
    def slug(self) -> str:
        return self.name.replace("/", "+")

    @property
    def pin(self) -> str:
        """What the sources are pinned at, as the run prints it."""
        if self.source == "pypi":
            return f"{self.package}=={self.version}"
        if self.source == "index":
            return "index"
        return self.commit[:10]


MEASURED = ("mirror", "pypi", "index")


def load_repos(path: Path = REPOS_FILE) -> list[Repo]:
    raw = yaml.safe_load(path.read_text())["repos"]
    repos = [Repo(r["name"], r["source"], str(r.get("commit", "")), str(r.get("subdir", "")), r.get("note", ""),
                  bool(r.get("markdown", False)), str(r.get("package", "")), str(r.get("version", "")),
                  str(r.get("sha256", "")), str(r.get("manifest", "")), str(r.get("half", "")))
             for r in raw]
    for repo in repos:
        if repo.source in MEASURED and repo.half not in HALVES:
            raise ValueError(f"{repo.name}: half must be one of {HALVES}, not {repo.half!r}")
        if repo.source == "pypi" and not (repo.package and re.fullmatch(r"[0-9][0-9A-Za-z.+!-]*", repo.version)
                                          and re.fullmatch(r"[0-9a-f]{64}", repo.sha256)):
            raise ValueError(f"{repo.name}: a pypi source needs package, an exact version and the sdist's sha256")
        if repo.source == "index" and not repo.manifest:
            raise ValueError(f"{repo.name}: an index source needs a manifest")
    return repos


# --- source: pypi (a pinned sdist) ----------------------------------------------


def sdist_name(package: str, version: str) -> str:
    """The file name of a package's sdist (PEP 625: the normalized name, underscores)."""
    return f"{re.sub(r'[-_.]+', '_', package).lower()}-{version}.tar.gz"


def sdist_members(names: list[str], package: str, version: str, subdir: str) -> dict[str, str]:
    """Archive member -> path in the sources folder for the .py files of `subdir` in an sdist.

    Every member must sit under the sdist's single top folder `<name>-<version>/` (the pin
    check: a tarball of another version or a hand-made archive is refused); absolute paths
    and `..` are refused. `subdir` ("" = everything) keeps its own name in the result.
    """
    top = sdist_name(package, version)[:-len(".tar.gz")]
    tops = {top, f"{package}-{version}"}  # older sdists keep the name's own spelling
    out = {}
    for name in names:
        parts = name.split("/")
        if name.startswith("/") or ".." in parts:
            raise ValueError(f"unsafe path in the sdist: {name!r}")
        if parts[0] not in tops:
            raise ValueError(f"{name!r} is not under {top}/: not the sdist of {package}=={version}")
        rel = "/".join(p for p in parts[1:] if p)
        if rel.endswith(".py") and (not subdir or rel.startswith(subdir.rstrip("/") + "/")):
            out[name] = rel
    return out


def sha256_of(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def extract_pypi(repo: Repo, dest: Path) -> None:
    """Download the pinned sdist with pip, check its sha256 and unpack its .py files of `subdir`."""
    import tarfile

    with tempfile.TemporaryDirectory(prefix="eco-sdist-") as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        "--dest", tmp, f"{repo.package}=={repo.version}"], check=True, timeout=900)
        archives = sorted(Path(tmp).glob("*.tar.gz"))
        if len(archives) != 1:
            raise SystemExit(f"{repo.name}: expected one sdist, pip left {[a.name for a in archives]}")
        data = archives[0].read_bytes()
        if sha256_of(data) != repo.sha256:
            raise SystemExit(f"{repo.name}: {archives[0].name} has sha256 {sha256_of(data)}, "
                             f"repos.yaml pins {repo.sha256}")
        with tarfile.open(archives[0]) as tar:
            regular = [m for m in tar.getmembers() if m.isfile()]
            wanted = sdist_members([m.name for m in regular], repo.package, repo.version, repo.subdir)
            for member in regular:
                if member.name in wanted:
                    target = dest / wanted[member.name]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(tar.extractfile(member).read())
    files = list(dest.rglob("*.py"))
    print(f"{repo.name} ({repo.package}=={repo.version} sdist, sha256 {repo.sha256[:12]}…): "
          f"{len(files)} Python files")


# --- source: index (files read one by one from the stored GitHub index) -------------


@dataclass(frozen=True)
class IndexFile:
    path: str  # in the repository, '/'-separated
    commit: str  # the commit the file was read at
    chars: int  # its length in characters (read_file's total_chars)
    sha256: str  # of the UTF-8 bytes written to the sources folder


def load_manifest(text: str) -> tuple[str, list[IndexFile]]:
    """The repository and the files of an index manifest (bench/ecosystem/<name>.yaml), checked."""
    raw = yaml.safe_load(text) or {}
    repo = str(raw.get("repo", ""))
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
        raise ValueError(f"manifest: repo must be owner/name, not {repo!r}")
    files, seen = [], set()
    for entry in raw.get("files") or []:
        path, commit, sha = str(entry.get("path", "")), entry.get("commit"), entry.get("sha256")
        if not path or path.startswith("/") or ".." in path.split("/") or "\\" in path:
            raise ValueError(f"manifest: bad path {path!r}")
        # YAML reads an all-digit hash as a number: such a value must be quoted.
        if not (isinstance(commit, str) and re.fullmatch(r"[0-9a-f]{40}", commit)):
            raise ValueError(f"manifest: {path}: commit must be 40 hex digits (a string), not {commit!r}")
        if not (isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{64}", sha)):
            raise ValueError(f"manifest: {path}: sha256 must be 64 hex digits (a string)")
        if path in seen:
            raise ValueError(f"manifest: {path} is listed twice")
        seen.add(path)
        files.append(IndexFile(path, commit, int(entry.get("chars", 0)), sha))
    if not files:
        raise ValueError("manifest: no files")
    return repo, files


def check_index_files(files: list[IndexFile], dest: Path) -> list[str]:
    """What is wrong with the sources folder against the manifest (empty: all files there and equal)."""
    problems = []
    for f in files:
        target = dest / f.path
        if not target.is_file():
            problems.append(f"{f.path}: missing")
            continue
        data = target.read_bytes()
        if sha256_of(data) != f.sha256:
            chars = len(data.decode("utf-8", "replace"))
            problems.append(f"{f.path}: differs from the manifest ({chars} characters, {f.chars} read)")
    return problems


def extract_index(repo: Repo, dest: Path) -> bool:
    """Files of the index cannot be downloaded by a script: verify them, and say how to re-create them."""
    repo_name, files = load_manifest((HERE / "ecosystem" / repo.manifest).read_text())
    if repo_name != repo.name:
        raise SystemExit(f"{repo.manifest} is the manifest of {repo_name}, not {repo.name}")
    problems = check_index_files(files, dest)
    if problems:
        print(f"{repo.name}: {len(problems)} of {len(files)} file(s) of bench/ecosystem/{repo.manifest} are not "
              f"as read under {dest}:")
        for problem in problems:
            print(f"  {problem}")
        print("  Re-create each one from the stored GitHub index: read_file repo=<repo> path=<path> commit=<commit>,\n"
              "  paging with offset until total_chars, and write the text as UTF-8 to "
              f"{dest}/<path>; its sha256 must equal the manifest's.")
        return False
    print(f"{repo.name}: {len(files)} file(s) of bench/ecosystem/{repo.manifest} present and equal")
    return True


def pytorch_cells(markdown: str) -> str:
    """The PyTorch code of a d2l-style Markdown notebook as one Python file.

    A cell is a ```{.python .input} fence; a first line `%%tab pytorch, mxnet` (older
    chapters: `#@tab pytorch`) names the frameworks it belongs to (none or `all`: every
    framework). Other cells become blank
    lines so that line numbers match the Markdown file; IPython magics are dropped.
    """
    out: list[str] = []
    cell: list[str] | None = None
    for line in markdown.splitlines():
        if cell is None:
            out.append("")
            if line.startswith("```{.python .input"):
                cell = []
            continue
        if line.startswith("```"):
            first = cell[0].strip() if cell else ""
            marker = next((m for m in ("%%tab", "#@tab") if first.startswith(m)), None)
            tabs = first[len(marker):] if marker else "all"
            names = {t.strip() for t in tabs.split(",")}
            keep = "pytorch" in names or "all" in names
            for text in cell:
                out.append(text if keep and not text.lstrip().startswith(("%", "!")) else "")
            out.append("")
            cell = None
            continue
        cell.append(line)
    return "\n".join(out) + "\n"


def load_verdicts(path: Path = VERDICTS_FILE) -> list[Verdict]:
    if not path.exists():
        return []
    raw = yaml.safe_load(path.read_text()) or {}
    return [Verdict.from_dict(v) for v in raw.get("verdicts") or []]


PIN_FILES = ("pyproject.toml", "setup.cfg", "environment.yml", "environment.yaml")


def _pins_torch_file(path: str) -> bool:
    """A file where a project states its torch version (what lint/analysis/environment.py reads)."""
    name = path.rsplit("/", 1)[-1]
    return name in PIN_FILES or (name.startswith("requirements") and name.endswith(".txt"))


def extract(repos: list[Repo], src: Path) -> int:
    """Write each repository's pinned Python files to src/<owner>+<name> (index sources: verify them)."""
    failed = 0
    for repo in repos:
        if repo.source == "index":
            failed += not extract_index(repo, src / repo.slug)
            continue
        if repo.source == "pypi":
            shutil.rmtree(src / repo.slug, ignore_errors=True)
            (src / repo.slug).mkdir(parents=True)
            extract_pypi(repo, src / repo.slug)
            continue
        if repo.source != "mirror":
            print(f"{repo.name}: skipped ({repo.note or repo.source})")
            continue
        git_dir = MIRRORS / repo.slug / "repo"
        if (git_dir / ".git").is_dir():  # some snapshots come as a work tree
            git_dir = git_dir / ".git"
        dest = src / repo.slug
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        # Only the Python blobs of `subdir` (a snapshot may lack its largest files: notebooks, weights),
        # and the project files anywhere that pin torch, as the user's checkout has them: the linter
        # reads the nearest one above a file, so a claim is made for the project's torch, not ours.
        listing = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", repo.commit],
                                 check=True, capture_output=True, timeout=600).stdout.decode()
        prefix = repo.subdir.rstrip("/") + "/" if repo.subdir else ""
        blobs = [(meta.split()[2], path) for meta, path in (entry.split("\t", 1) for entry in listing.split("\0") if entry)
                 if meta.split()[1] == "blob" and ((path.endswith(".py") and path.startswith(prefix))
                                                   or _pins_torch_file(path))]
        batch = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
                               input="".join(f"{sha}\n" for sha, _ in blobs).encode(),
                               check=True, capture_output=True, timeout=600).stdout
        offset = 0
        for sha, path in blobs:
            header_end = batch.index(b"\n", offset)
            header = batch[offset:header_end].split()
            if header[1] == b"missing":
                offset = header_end + 1
                print(f"  {path}: missing from the snapshot", file=sys.stderr)
                continue
            length = int(header[2])
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(batch[header_end + 1:header_end + 1 + length])
            offset = header_end + 1 + length + 1
        if repo.markdown:
            listing = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", "-z",
                                      repo.commit], check=True, capture_output=True, timeout=600).stdout.decode()
            for path in (p for p in listing.split("\0") if p.endswith(".md") and p.startswith("chapter_")):
                text = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{repo.commit}:{path}"],
                                      check=True, capture_output=True, timeout=60).stdout.decode("utf-8", "replace")
                code = pytorch_cells(text)
                if code.strip():
                    (dest / (path + ".py")).parent.mkdir(parents=True, exist_ok=True)
                    (dest / (path + ".py")).write_text(code)
        files = list(dest.rglob("*.py"))
        print(f"{repo.name}@{repo.commit[:10]}: {len(files)} Python files")
    return 1 if failed else 0


def lint(src: Path, repo: Repo, extra: list[str], timeout: int = 3600) -> tuple[list[dict], str]:
    """Run the real CLI over one extracted repository: its JSON findings and its stderr."""
    root = src / repo.slug
    target = root / repo.subdir if repo.subdir else root
    proc = subprocess.run([sys.executable, "-m", "traindoctor", "check", "--format", "json", "--exit-zero",
                           *extra, str(target)], capture_output=True, text=True, timeout=timeout)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{repo.name}: traindoctor check failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
    return json.loads(proc.stdout or "[]"), proc.stderr


def to_hits(repo: Repo, root: Path, findings: list[dict]) -> list[Hit]:
    lines_of: dict[str, list[str]] = {}
    hits = []
    for f in findings:
        rel = Path(f["path"]).resolve().relative_to(root.resolve()).as_posix()
        if rel not in lines_of:
            lines_of[rel] = (root / rel).read_text(encoding="utf-8-sig", errors="replace").splitlines()
        lines = lines_of[rel]
        text = lines[f["line"] - 1] if 0 < f["line"] <= len(lines) else ""
        hits.append(Hit(repo.name, rel, f["line"], f["code"], text.strip(), f["message"], f["column"]))
    return hits


def size(root: Path) -> tuple[int, int]:
    files = lines = 0
    for path in root.rglob("*.py"):
        files += 1
        with path.open("rb") as handle:
            lines += sum(1 for _ in handle)
    return files, lines


def stub(hit: Hit, root: Path, context: int = 3) -> dict:
    """An unjudged finding as a verdicts.yaml entry to fill in, with the code around it."""
    lines = (root / hit.path).read_text(encoding="utf-8-sig", errors="replace").splitlines()
    lo, hi = max(0, hit.line - 1 - context), min(len(lines), hit.line + context)
    return {"repo": hit.repo, "path": hit.path, "line": hit.line, "code": hit.code, "text": hit.text,
            "verdict": "?", "reason": "", "message": hit.message,
            "context": "\n".join(f"{n + 1:5}{'>' if n + 1 == hit.line else ' '} {lines[n]}" for n in range(lo, hi))}


def chosen(args: argparse.Namespace) -> list[Repo]:
    """The measured repositories that --repo and --half select."""
    return [r for r in load_repos() if r.source in MEASURED and (not args.repo or r.name in args.repo)
            and (not args.half or r.half == args.half)]


def lint_options(args: argparse.Namespace) -> list[str]:
    return [*(["--jobs", str(args.jobs)] if args.jobs else []), *(["--select", args.select] if args.select else [])]


def run(args: argparse.Namespace) -> int:
    repos = chosen(args)
    verdicts = load_verdicts()
    hits: list[Hit] = []
    print(f"{'repository':36} {'commit':10} {'files':>6} {'lines':>8} {'findings':>8} {'errors':>6}")
    dumps = {}
    # Re-score findings saved by an earlier `run --json` (after judging) without linting again.
    saved = json.loads(Path(args.from_json).read_text()) if args.from_json else None
    for repo in repos:
        root = args.src / repo.slug
        if not root.exists():
            print(f"{repo.name}: not extracted under {args.src} (run `extract` first)", file=sys.stderr)
            return 2
        if saved is not None:
            findings, stderr = saved.get(repo.name, []), ""
        else:
            findings, stderr = lint(args.src, repo, lint_options(args))
        repo_hits = to_hits(repo, root, findings)
        hits.extend(repo_hits)
        dumps[repo.name] = findings
        files, lines = size(root)
        errors = sum(1 for line in stderr.splitlines() if ": error: " in line)
        print(f"{repo.name:36} {repo.pin:10} {files:>6} {lines:>8} {len(findings):>8} {errors:>6}")
    for repo in load_repos():
        if repo.source not in MEASURED and (not args.repo or repo.name in args.repo) and not args.half:
            print(f"{repo.name:36} not measured: {' '.join(repo.note.split()) or repo.source}")
    if args.json:
        Path(args.json).write_text(json.dumps(dumps, indent=1))
    names = {r.name for r in repos}
    verdicts = [v for v in verdicts if v.repo in names]
    pairs, leftover = match(hits, verdicts)
    print()
    print("\n".join(format_table(score(pairs))))
    unjudged = [hit for hit, verdict in pairs if verdict is None]
    if unjudged:
        print(f"\n{len(unjudged)} unjudged finding(s):")
        for hit in unjudged:
            print(f"  {hit.repo}:{hit.path}:{hit.line}:{hit.column}: {hit.code} {hit.message}\n      | {hit.text}")
    if leftover:
        print(f"\n{len(leftover)} verdict(s) without a finding now (fixed by a rule change, or the code moved):")
        for v in leftover:
            print(f"  {v.repo}:{v.path}:{v.line}: {v.code} [{v.verdict}] {v.reason}")
    if args.stubs:
        roots = {r.name: args.src / r.slug for r in repos}
        with open(args.stubs, "w") as handle:
            yaml.safe_dump([stub(h, roots[h.repo]) for h in unjudged], handle, sort_keys=False, width=1000,
                           allow_unicode=True)
        print(f"\nwrote {len(unjudged)} stub(s) to {args.stubs}")
    return 0


# --- fix check --------------------------------------------------------------------

# pyflakes messages that mean a fix broke the file (as opposed to style).
BREAKING = ("UndefinedName", "UndefinedLocal", "UndefinedExport", "RedefinedWhileUnused",
            "ImportShadowedByLoopVar", "UsedBeforeAssignment")


def flakes(source: str, filename: str) -> Counter:
    """Counter of (message class, message text) of the breaking pyflakes messages."""
    from pyflakes import api, reporter

    class Collect(reporter.Reporter):
        def __init__(self) -> None:
            self.found: Counter = Counter()

        def flake(self, message) -> None:  # noqa: ANN001
            name = type(message).__name__
            if name in BREAKING:
                # "from line 104": an edit above shifts it, which is not a new problem
                text = re.sub(r"line \d+", "line N", message.message % message.message_args)
                self.found[(name, text)] += 1

        def unexpectedError(self, filename, msg) -> None:  # noqa: ANN001
            self.found[("Error", str(msg))] += 1

        def syntaxError(self, filename, msg, lineno, offset, text) -> None:  # noqa: ANN001
            self.found[("SyntaxError", f"{msg} at line {lineno}")] += 1

    collect = Collect()
    api.check(source, filename, collect)
    return collect.found


def new_breakages(before: str, after: str, filename: str) -> list[str]:
    """What a fix broke: a parse error, or pyflakes messages the original did not have."""
    try:
        ast.parse(after, filename)
    except SyntaxError as exc:
        return [f"does not parse: {exc.msg} at line {exc.lineno}"]
    added = flakes(after, filename) - flakes(before, filename)
    return [f"{kind}: {text}" for (kind, text), n in sorted(added.items()) for _ in range(n)]


def fix_copies(args: argparse.Namespace, repos: list[Repo], tmp: Path, saved: dict | None,
               code: str = "") -> tuple[int, list[str]]:
    """Apply `check --fix` to copies of the repositories (only `code`'s fixes when given).

    Returns the number of files the fixes changed and the names of those they broke.
    With findings saved by `run --json`, only the files that have a fix (of `code`) are
    copied (a fix never touches another file); otherwise the whole repository is.
    """
    extra = ["--fix", *(["--unsafe-fixes"] if args.unsafe_fixes else [])]
    select = code or args.select
    options = [*extra, *(["--jobs", str(args.jobs)] if args.jobs else []), *(["--select", select] if select else [])]
    changed, broken = 0, []
    for repo in repos:
        original = args.src / repo.slug
        copy = tmp / repo.slug
        if saved is None:
            shutil.copytree(original, copy)
        else:
            fixable = {Path(f["path"]).resolve().relative_to(original.resolve())
                       for f in saved.get(repo.name, []) if f.get("fix") and (not code or f["code"] == code)}
            if not fixable:
                continue
            for rel in fixable:
                (copy / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(original / rel, copy / rel)
        lint(tmp, repo, options)
        for path in sorted(copy.rglob("*.py")):
            rel = path.relative_to(copy).as_posix()
            before = (original / rel).read_text(encoding="utf-8-sig", errors="replace")
            after = path.read_text(encoding="utf-8-sig", errors="replace")
            if before == after:
                continue
            changed += 1
            problems = new_breakages(before, after, rel)
            label = f"{code + ' ' if code else ''}{repo.name}:{rel}"
            if problems:
                broken.append(f"{repo.name}:{rel}")
                print(f"{label}: BROKEN by the fix")
                for problem in problems:
                    print(f"    {problem}")
                if args.show_diff:
                    import difflib

                    sys.stdout.writelines(difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                                               f"a/{rel}", f"b/{rel}"))
            else:
                print(f"{label}: fixed, parses, no new pyflakes errors")
    return changed, broken


def fixable_codes(saved: dict) -> Counter:
    """Rule code -> number of saved findings that carry a fix."""
    return Counter(f["code"] for findings in saved.values() for f in findings if f.get("fix"))


def fixcheck(args: argparse.Namespace) -> int:
    repos = chosen(args)
    saved = json.loads(Path(args.from_json).read_text()) if args.from_json else None
    with tempfile.TemporaryDirectory(prefix="eco-fix-") as scratch:
        tmp = Path(args.keep or scratch)
        if not args.per_rule:
            changed, broken = fix_copies(args, repos, tmp, saved)
            print(f"\n{changed} file(s) changed by `check --fix`, {len(broken)} broken")
            return 1 if broken else 0
        if saved is None:
            raise SystemExit("--per-rule needs --from-json (the findings saved by `run --json`)")
        # One rule at a time, each on fresh copies, so that a broken file is charged to its rule.
        summary = {}
        for code, fixes in sorted(fixable_codes(saved).items()):
            changed, broken = fix_copies(args, repos, tmp / code, saved, code)
            summary[code] = {"fixes": fixes, "files_changed": changed, "files_broken": len(broken),
                             "broken": broken}
    for code, entry in summary.items():
        print(f"{code}: {entry['fixes']} fix(es), {entry['files_changed']} file(s) changed, "
              f"{entry['files_broken']} broken")
    if args.json:
        Path(args.json).write_text(json.dumps({"rules": summary}, indent=1))
    return 1 if any(e["files_broken"] for e in summary.values()) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=DEFAULT_SRC, help=f"extracted sources (default {DEFAULT_SRC})")
    sub = parser.add_subparsers(dest="command", required=True)
    extract_parser = sub.add_parser("extract", help="extract the pinned sources (mirrors, PyPI sdists; index files are verified)")
    extract_parser.add_argument("--repo", action="append", default=[], help="only this owner/name (repeatable)")
    for name in ("run", "fixcheck"):
        p = sub.add_parser(name)
        p.add_argument("--repo", action="append", default=[], help="only this owner/name (repeatable)")
        p.add_argument("--jobs", type=int, default=0, help="passed to `traindoctor check --jobs`")
        p.add_argument("--half", choices=HALVES, help="only the repositories of this half")
        p.add_argument("--select", help="passed to `traindoctor check --select` (e.g. strict)")
        if name == "run":
            p.add_argument("--stubs", help="write the unjudged findings as verdict stubs to this YAML file")
            p.add_argument("--json", help="write the raw findings per repository to this file")
            p.add_argument("--from-json", help="score the findings saved by an earlier --json instead of linting")
        else:
            p.add_argument("--unsafe-fixes", action="store_true")
            p.add_argument("--from-json", help="only the files with a fix in findings saved by `run --json`")
            p.add_argument("--show-diff", action="store_true", help="print the diff of every broken file")
            p.add_argument("--keep", help="fix the copies in this (new) folder and keep them")
            p.add_argument("--per-rule", action="store_true",
                           help="fix one rule at a time (needs --from-json) and count broken files per rule")
            p.add_argument("--json", help="with --per-rule: write the counts per rule to this file")
    args = parser.parse_args(argv)
    if args.command == "extract":
        return extract([r for r in load_repos() if not args.repo or r.name in args.repo], args.src)
    return run(args) if args.command == "run" else fixcheck(args)


if __name__ == "__main__":
    sys.exit(main())
