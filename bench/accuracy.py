"""The lint's accuracy in one table: precision on both halves of the ecosystem check, recall
on real bug fixes, and fixes that broke code.

    make bench-accuracy                                    # = the line below
    .venv/bin/python bench/accuracy.py --bugs bench/bugs/results.json
    .venv/bin/python bench/accuracy.py --relint            # lint again instead of reading saved results
    .venv/bin/python bench/accuracy.py --run-bugs          # run bench/bugs/score.py --json <--bugs> first
    make bench-accuracy ACCURACY_ARGS="--relint --run-bugs" BUGS_JSON=/path/to/bugs.json

Per rule it prints: on each half of the ecosystem check (bench/ecosystem/repos.yaml, judged
in verdicts.yaml) its findings, its true findings and its precision; on the real-bug benchmark
(bench/bugs/score.py --json PATH) its labelled fixes, its recall and its quiet-after (of the
hits, how many the fix commit silences); and from `ecosystem.py fixcheck --per-rule
--unsafe-fixes` on both halves, the files its fixes changed (safe and unsafe ones, one rule at
a time) and how many of those they broke (no longer parse, or new pyflakes errors).
The halves are linted with the strict set (`--select strict`); the default set's rows are the
same findings without the strict-only rules, so the table gives both totals.

Saved results (findings per half, fix check, the commit and date they were measured at) live
in --results, outside the repository, because they point into the extracted sources
(`ecosystem.py extract`). They are reused until --relint; the header says what commit they
come from. A missing bug-benchmark file prints "not measured" in its columns.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
DEFAULT_RESULTS = Path(os.environ.get("TRAINDOCTOR_ACCURACY_RESULTS", "/work/eco-out/accuracy"))
DEFAULT_BUGS = HERE / "bugs" / "results.json"


def _load_ecosystem():
    spec = importlib.util.spec_from_file_location("ecosystem", HERE / "ecosystem.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["ecosystem"] = module  # dataclasses look the module up by name
    spec.loader.exec_module(module)
    return module


eco = _load_ecosystem()


# --- pure logic (unit-tested) ---------------------------------------------------


@dataclass(frozen=True)
class Row:
    rule: str  # a code, or a total's label
    rule_set: str  # default | strict | "" for a total
    dev: "eco.RuleScore | None"  # None: the half was not measured
    test: "eco.RuleScore | None"
    bugs: dict | None  # {"labelled", "hits", "quiet_after"}; None: not measured
    fixes: dict | None  # {"files_changed", "files_broken"}; None: not measured


def _add(scores: list) -> "eco.RuleScore":
    out = eco.RuleScore()
    for s in scores:
        out.tp += s.tp
        out.fp += s.fp
        out.debatable += s.debatable
        out.unjudged += s.unjudged
    return out


def _sum_dicts(entries: list[dict], keys: tuple[str, ...]) -> dict:
    return {k: sum(int(e.get(k, 0)) for e in entries) for k in keys}


BUG_KEYS = ("labelled", "hits", "quiet_after")
FIX_KEYS = ("files_changed", "files_broken")


def accuracy_rows(rule_sets: dict[str, str], dev: dict | None, test: dict | None, bugs: dict | None,
                  fixes: dict | None) -> list[Row]:
    """One row per rule (every rule of the catalog, and any code a source reports), then the totals.

    dev/test: code -> RuleScore of that half (None: not measured). bugs: the bug benchmark's JSON
    (None: not measured); fixes: `fixcheck --per-rule --json` (None: not measured). A rule absent
    from a measured source has zeros there. Totals: the default set (its rules only) and the
    strict set (every rule).
    """
    codes = set(rule_sets)
    for source in (dev, test, (bugs or {}).get("rules"), (fixes or {}).get("rules")):
        codes |= set(source or {})

    def score_of(half: dict | None, code: str):
        return None if half is None else half.get(code, eco.RuleScore())

    def bugs_of(code: str):
        return None if bugs is None else _sum_dicts([bugs.get("rules", {}).get(code, {})], BUG_KEYS)

    def fixes_of(code: str):
        return None if fixes is None else _sum_dicts([fixes.get("rules", {}).get(code, {})], FIX_KEYS)

    rows = [Row(code, rule_sets.get(code, "?"), score_of(dev, code), score_of(test, code), bugs_of(code),
                fixes_of(code)) for code in sorted(codes)]
    for label, members in (("all default", [r for r in rows if r.rule_set == "default"]), ("all strict", list(rows))):
        rows.append(Row(label, "",
                        None if dev is None else _add([r.dev for r in members]),
                        None if test is None else _add([r.test for r in members]),
                        None if bugs is None else _sum_dicts([r.bugs for r in members], BUG_KEYS),
                        None if fixes is None else _sum_dicts([r.fixes for r in members], FIX_KEYS)))
    return rows


def _ratio(num: int, den: int) -> str:
    return f"{num / den:.2f}" if den else "-"


def _half_cells(score) -> list[str]:
    if score is None:
        return ["not measured", "", ""]
    judged_note = f"+{score.unjudged}?" if score.unjudged else ""
    return [f"{score.findings}{judged_note}", str(score.tp),
            "-" if score.precision is None else f"{score.precision:.2f}"]


def format_accuracy(rows: list[Row]) -> list[str]:
    """The table as Markdown (it reads as plain text too)."""
    head = ["rule", "set", "dev findings", "dev true", "dev precision", "test findings", "test true",
            "test precision", "real fixes", "recall", "quiet-after", "fixed files", "broken"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for row in rows:
        cells = [row.rule, row.rule_set, *_half_cells(row.dev), *_half_cells(row.test)]
        if row.bugs is None:
            cells += ["not measured", "", ""]
        else:
            b = row.bugs
            cells += [str(b["labelled"]), _ratio(b["hits"], b["labelled"]),
                      f"{b['quiet_after']}/{b['hits']}" if b["hits"] else "-"]
        if row.fixes is None:
            cells += ["not measured", ""]
        else:
            cells += [str(row.fixes["files_changed"]), str(row.fixes["files_broken"])]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def read_bugs(path: Path | None) -> tuple[dict | None, str]:
    """The bug benchmark's JSON, or None and why it is not measured."""
    if path is None or not path.exists():
        return None, f"real-bug benchmark: not measured ({path or 'no --bugs'} does not exist)"
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("rules"), dict):
        raise SystemExit(f"{path}: not the JSON of bench/bugs/score.py --json (no 'rules' object)")
    when = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return data, f"real-bug benchmark: {path} (written {when})"


# --- measuring --------------------------------------------------------------------


def git_head(what: str = "HEAD") -> str:
    out = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", what], capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def lint_tree() -> str:
    """The committed linter (server/ and rules/): saved findings stay valid while it is unchanged."""
    return f"{git_head('HEAD:server')[:12]}-{git_head('HEAD:rules')[:12]}"


def lint_half(half: str, src: Path, jobs: int, results: Path) -> tuple[dict, list[str]]:
    """Lint the extracted repositories of one half with the strict set; save and return the findings."""
    saved, skipped = {}, []
    for repo in eco.load_repos():
        if repo.source not in eco.MEASURED or repo.half != half:
            continue
        if not (src / repo.slug).exists():
            skipped.append(repo.name)
            continue
        print(f"linting {half}: {repo.name}", file=sys.stderr)
        saved[repo.name], _ = eco.lint(src, repo, ["--select", "strict", "--jobs", str(jobs)])
    (results / f"findings-{half}.json").write_text(json.dumps({"findings": saved, "skipped": skipped}, indent=1))
    return saved, skipped


def score_half(half: str, saved: dict, src: Path) -> dict:
    repos = {r.name: r for r in eco.load_repos()}
    hits = []
    for name, findings in saved.items():
        hits.extend(eco.to_hits(repos[name], src / repos[name].slug, findings))
    verdicts = [v for v in eco.load_verdicts() if v.repo in saved]
    pairs, _ = eco.match(hits, verdicts)
    return eco.score(pairs)


def run_fixcheck(src: Path, results: Path, jobs: int) -> dict:
    merged = {}
    for half in eco.HALVES:
        merged.update(json.loads((results / f"findings-{half}.json").read_text())["findings"])
    (results / "findings-all.json").write_text(json.dumps(merged))
    out = results / "fixcheck.json"
    # Every fix the user can apply, unsafe ones too (`check --fix --unsafe-fixes`).
    # fixcheck exits 1 when a fix broke a file: that is a result, not a failure.
    proc = subprocess.run([sys.executable, str(HERE / "ecosystem.py"), "--src", str(src), "fixcheck", "--per-rule",
                           "--from-json", str(results / "findings-all.json"), "--json", str(out),
                           "--jobs", str(jobs), "--unsafe-fixes", *sum((["--repo", name] for name in merged), [])],
                          capture_output=True, text=True)
    (results / "fixcheck.log").write_text(proc.stdout)  # which files each rule's fixes changed or broke
    if proc.returncode not in (0, 1) or not out.exists():
        raise SystemExit(f"fixcheck failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
    return json.loads(out.read_text())


def run_bugs(out: Path) -> None:
    """Run the real-bug benchmark into `out`; when it cannot run, its columns say not measured."""
    scorer = HERE / "bugs" / "score.py"
    if not scorer.exists():
        print(f"{scorer} does not exist: the real-bug benchmark is not measured", file=sys.stderr)
        return
    proc = subprocess.run([sys.executable, str(scorer), "--json", str(out)])
    if proc.returncode != 0:
        print(f"bench/bugs/score.py exited {proc.returncode}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bugs", type=Path, default=DEFAULT_BUGS, help="bench/bugs/score.py --json output")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS, help="saved findings and fix check")
    parser.add_argument("--src", type=Path, default=eco.DEFAULT_SRC, help="extracted sources (ecosystem.py extract)")
    parser.add_argument("--relint", action="store_true", help="lint both halves and re-run the fix check")
    parser.add_argument("--jobs", type=int, default=2, help="passed to `traindoctor check --jobs`")
    parser.add_argument("--run-bugs", action="store_true", help="run bench/bugs/score.py --json <--bugs> first")
    args = parser.parse_args(argv)
    args.results.mkdir(parents=True, exist_ok=True)
    meta_file = args.results / "meta.json"
    meta = json.loads(meta_file.read_text()) if meta_file.exists() else {}

    halves, notes = {}, []
    for half in eco.HALVES:
        path = args.results / f"findings-{half}.json"
        if args.relint or not path.exists():
            saved, skipped = lint_half(half, args.src, args.jobs, args.results)
            meta = {"commit": git_head(), "lint_tree": lint_tree(),
                    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")}
            meta_file.write_text(json.dumps(meta))
        else:
            data = json.loads(path.read_text())
            saved, skipped = data["findings"], data["skipped"]
        if skipped:
            notes.append(f"{half} half: not extracted under {args.src}, left out: {', '.join(skipped)}")
        halves[half] = score_half(half, saved, args.src) if saved else None
    fix_path = args.results / "fixcheck.json"
    fixes = run_fixcheck(args.src, args.results, args.jobs) if args.relint or not fix_path.exists() else \
        json.loads(fix_path.read_text())
    if args.run_bugs:
        run_bugs(args.bugs)
    bugs, bugs_note = read_bugs(args.bugs)

    from traindoctor.catalog import load_rules

    rule_sets = {code: info.rule_set for code, info in load_rules().items()}
    stale = meta.get("lint_tree") != lint_tree()
    print(f"ecosystem check and fix check: traindoctor {meta.get('commit', '?')[:10]}, measured {meta.get('date', '?')}"
          + (" (server/ or rules/ changed since: run with --relint to re-measure)" if stale else ""))
    print(bugs_note)
    for note in notes:
        print(note)
    print()
    print("\n".join(format_accuracy(accuracy_rows(rule_sets, halves["dev"], halves["test"], bugs, fixes))))
    for half, counts in ((bugs or {}).get("halves") or {}).items():
        print(f"real-bug recall, {half} half: {counts['hits']}/{counts['labelled']} = "
              f"{_ratio(counts['hits'], counts['labelled'])} (quiet after {counts['quiet_after']}/{counts['hits']})")
    print("\nfindings: +N? = N not yet judged (not counted in precision); precision = true / judged, "
          "a debatable finding is not true; quiet-after = hits the fix commit silences / hits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
