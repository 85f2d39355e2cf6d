"""`traindoctor check`: lint files and folders.

Exit codes (as Ruff): 0 no findings, 1 findings (after --fix: findings left;
a file that cannot be read or parsed is a TRN000 finding at its line), 2 usage
error, a configuration or write error, or no Python file to lint (a warning).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..config import ConfigError, load_config
from ..fsio import has_bom, match_line_endings, replace_text
from ..lint.api import LintResult, fix_source, lint_source, read_source
from ..lint.diff import unified_diff
from ..lint.engine import LintCache, LintError
from ..lint.files import python_files
from ..lint.notebook import check_notebook, is_notebook
from ..lint.analysis.summary import EMPTY_IMPORTS, FileSummary, ImportedFacts, answers
from ..lint.project import Asking, Imported, index_for_check, new_index
from ..model import Finding
from . import errors, output

# Below this many files the process pool costs more than it saves.
_PARALLEL_THRESHOLD = 8


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("check", help="lint training code for bugs that ruin runs")
    parser.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="files or folders (default: .)")
    parser.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text")
    parser.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    parser.add_argument("--unsafe-fixes", action="store_true",
                        help="also apply (with --fix or --diff) and offer the fixes that may change behaviour")
    parser.add_argument("--diff", action="store_true",
                        help="print the fixes as a unified diff and write nothing (also with --fix)")
    parser.add_argument("--statistics", action="store_true", help="count the findings per rule instead of listing them")
    parser.add_argument("--select", action="append", default=[], metavar="CODES",
                        help="only these codes or prefixes (comma-separated; repeatable)")
    parser.add_argument("--ignore", action="append", default=[], metavar="CODES",
                        help="skip these codes or prefixes (comma-separated; repeatable)")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    parser.add_argument("--jobs", type=int, default=0, help="worker processes (default: CPU count)")
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class _Job:
    path: str
    select: tuple[str, ...]
    ignore: tuple[str, ...]
    mode: str  # "lint", "fix" or "diff"
    unsafe: bool = False  # --unsafe-fixes: apply the unsafe fixes too
    imported: ImportedFacts = EMPTY_IMPORTS  # what the file reads from the project's other files
    summarize: bool = False  # lint mode: also return the file's project summary (one parse for both)


@dataclass(frozen=True)
class _Outcome:
    result: LintResult
    diff: str = ""
    fixed: int = 0
    summary: FileSummary | None = None
    asked: frozenset = frozenset()  # the questions its lint put to the project's facts (AskedFacts)


def _split(values: list[str]) -> tuple[str, ...]:
    return tuple(code.strip() for value in values for code in value.split(",") if code.strip())


def _process(job: _Job) -> _Outcome:
    path = Path(job.path)
    try:
        config = load_config(path).with_overrides(select=job.select, ignore=job.ignore)
    except ConfigError as exc:
        return _Outcome(LintResult(job.path, error=f"configuration: {exc}", fatal=True))
    if is_notebook(path):
        return _Outcome(*check_notebook(path, config, job.mode))
    try:
        source = read_source(path)
    except LintError as exc:
        return _Outcome(LintResult(job.path, error=str(exc)))
    project = Asking() if job.summarize else Imported(job.imported) if job.imported else None
    if job.mode == "lint":
        cache = LintCache()
        result = lint_source(source, job.path, config, cache, project)
        asked = frozenset(project.facts.asked) if isinstance(project, Asking) else frozenset()
        return _Outcome(result, summary=cache.summary, asked=asked)
    fixed, count = fix_source(source, job.path, config, unsafe=job.unsafe, project=project)
    diff = ""
    if fixed != source:
        if job.mode == "fix":
            error = _write_fixed(path, source, fixed)
            if error:
                return _Outcome(LintResult(job.path, error=error, fatal=True))
        else:
            diff = unified_diff(source.splitlines(keepends=True), fixed.splitlines(keepends=True), job.path)
    after = lint_source(fixed if job.mode == "fix" else source, job.path, config, project=project)
    return _Outcome(after, diff, count)


def _write_fixed(path: Path, source: str, fixed: str) -> str | None:
    """Atomically replace the file with the fixed text, keeping its BOM and line
    endings; the one-line reason when that fails (the file is then unchanged)."""
    try:
        replace_text(path, match_line_endings(source, fixed), bom=has_bom(path))
    except OSError as exc:
        return f"cannot write fixes: {exc.strerror or exc}"
    return None


@contextlib.contextmanager
def _mapper(count: int, workers: int):
    """map(function, items) in the worker pool (in this process for a few files)."""
    if count < _PARALLEL_THRESHOLD or workers <= 1:
        yield lambda function, items: [function(item) for item in items]
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        def largest_first(function, items):
            # one file at a time, the largest first: a large file left for the end (torch's
            # functional.py is a tenth of its tree) would keep one worker busy while the others wait
            order = sorted(range(len(items)), key=lambda i: -_size(items[i]))
            futures = {i: pool.submit(function, items[i]) for i in order}
            return [futures[i].result() for i in range(len(items))]
        yield largest_first


def _size(item: _Job | str) -> int:
    try:
        return os.path.getsize(item.path if isinstance(item, _Job) else item)
    except OSError:
        return 0


def _run_jobs(jobs: list[_Job], workers: int, base_folders: list[str] = ()) -> list[_Outcome]:
    """Every file's lint and summary in parallel (one parse for both); the summaries of the
    project files they import; then, in parallel again, the files that read another file's
    facts are linted once more with them. --fix and --diff summarize first, then fix.
    `base_folders`: where imports of a project without a marker resolve from (ProjectIndex.set_base_folders)."""
    with _mapper(len(jobs), workers) as mapper:
        if any(job.mode != "lint" for job in jobs):
            index = index_for_check([job.path for job in jobs], mapper, new_index(base_folders))
            if len(index):
                jobs = [_with_imports(job, index) for job in jobs]
            return mapper(_process, jobs)
        outcomes = mapper(_process, [dataclasses.replace(job, summarize=True) for job in jobs])
        index = new_index(base_folders)
        for job, outcome in zip(jobs, outcomes):
            if outcome.summary is not None:
                index.set_summary(job.path, outcome.summary)
        index_for_check([job.path for job in jobs], mapper, index)
        # lint again only the files whose lint asked what the project's facts answer
        again = [(i, job) for i, job in ((i, _with_imports(job, index)) for i, job in enumerate(jobs))
                 if job.imported and answers(job.imported, outcomes[i].asked)]
        for (i, _), outcome in zip(again, mapper(_process, [job for _, job in again])):
            outcomes[i] = outcome
        return outcomes


def _with_imports(job: _Job, index) -> _Job:
    summary = index.summary(job.path)
    if summary is None:
        return job
    imported = index.imported_for(job.path, summary.imports)
    return dataclasses.replace(job, imported=imported) if imported else job


def run(args: argparse.Namespace) -> int:
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        return errors.error(f"no such file or folder: {missing[0]}")
    # As Ruff: --diff shows what --fix would do and writes nothing, alone or with --fix.
    mode = "diff" if args.diff else "fix" if args.fix else "lint"
    select, ignore = _split(args.select), _split(args.ignore)
    jobs = [_Job(str(path), select, ignore, mode, args.unsafe_fixes) for path in python_files(args.paths)]
    if not jobs:
        # As Ruff: nothing to lint is a warning, and not a clean run.
        return errors.warning("No Python files found under " + ", ".join(args.paths))
    workers = args.jobs or os.cpu_count() or 1
    # A checked folder, and the working directory (where `python train.py` starts), are where a
    # project without a marker (no pyproject.toml, setup.py or .git) imports its own modules from.
    bases = [str(Path(p).resolve()) for p in args.paths if Path(p).is_dir()] + [os.getcwd()]
    outcomes = _run_jobs(jobs, workers, bases)

    findings: list[Finding] = []
    failed = 0
    for outcome in outcomes:
        result = outcome.result
        if result.error and result.fatal:
            failed += 1
            print(f"{result.path}: error: {result.error}", file=sys.stderr)
        elif result.error:
            findings.append(output.unlintable(result))
        findings.extend(result.findings)
        if outcome.diff:
            sys.stdout.write(outcome.diff)
    fixed = sum(o.fixed for o in outcomes)

    unsafe = args.unsafe_fixes
    if args.statistics and not args.diff:
        if args.format == "json":
            print(json.dumps(output.statistics_json(findings, unsafe=unsafe), indent=2))
        else:
            for line in output.statistics(findings, unsafe=unsafe):
                print(line)
    elif args.format == "json":
        print(json.dumps(output.json_findings(findings), indent=2))
    elif args.format == "sarif":
        print(json.dumps(output.sarif(findings), indent=2))
    elif args.format == "github":
        for line in output.github(findings):
            print(line)
    elif not args.diff:
        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        for line in output.text(findings, color=color, unsafe=unsafe):
            print(line)
        print(output.summary(findings, files=len(jobs), errors=failed, fixed=fixed, color=color,
                             unsafe=unsafe))

    if failed:
        return 2
    if args.exit_zero:
        return 0
    if args.diff:
        return 1 if any(o.diff for o in outcomes) or findings else 0
    return 1 if findings else 0
