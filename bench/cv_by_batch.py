"""How well the fitted parts of `diagnose` generalise to a batch of pastes they were not fitted on,
measured inside the wild corpus's dev half (issue 28). The test half is never read.

The wild corpus was collected in batches (tests/diagnose/data/wild/README.md; BATCHES below):
w001-w270, w271-w345, w346-w453, w454-w582, w583-w724, w725-w867, w868-w929, w930-w992 and w993-w1063 (a batch with no dev paste here is skipped). A new batch is what a held-out set looks like to the tool:
other threads, other libraries, other wordings, collected later. Everything *fitted* is refitted
without the dev pastes of one batch and scored on them:

- the evidence model's counts (bench/fit_evidence_model.py: `fit`, on every labelled log but
  that batch, with their cut copies);
- the calibration maps (bench/calibration.py: `fit` on the signature and partial-evidence
  predictions of the same logs, made with the fold's evidence model).

Then `traindoctor diagnose` (diagnose_text, then diagnose_curves, as the wild scorer does) runs on
the held-out batch's dev pastes with the fold's counts and maps (estimate A). The newest batch's
fold is the forward one: fitted on the older batches only, as that batch looked when it arrived.

A does not hold out the signatures, clues and vocabularies (rules/), which people wrote while
reading dev pastes of every batch. Estimate B also removes, in each fold, every signature pattern
and clue that fires on the held-out batch's dev pastes and on no other labelled log (dev, fresh,
formats, kinds, real, healthy, the other batches): the rules written for that batch. A general
rule that only that batch happens to show is removed too, so B errs low; a rule written for the
batch that also fires elsewhere stays, so it can err high. B is the number to move: a change that
raises A but not B has learnt the dev pastes, not the failures.

Reported per fold and pooled: kind, family, user frame and ECE, and the held-out misses by label.

    .venv/bin/python bench/cv_by_batch.py             # the committed settings; writes bench/cv_by_batch.md
    .venv/bin/python bench/cv_by_batch.py --misses    # also print each held-out miss
    .venv/bin/python bench/cv_by_batch.py --set alpha=1.0 --set word_scale=0.3   # a variant, not written
    .venv/bin/python bench/cv_by_batch.py --model-alone --set shrink=2   # the model by itself, held out by batch
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "diagnose"))

import calibration as calibration_bench  # noqa: E402
import fit_evidence_model as model_bench  # noqa: E402

from traindoctor.diagnose import calibration as calibration_map  # noqa: E402
from traindoctor.diagnose import diagnose_text, evidence_model, partial, select, signatures  # noqa: E402
from traindoctor.diagnose.normalize import normalize  # noqa: E402
from traindoctor.diagnose.parse import parse_chains  # noqa: E402
from traindoctor.diagnose.select import exception_text  # noqa: E402
from traindoctor.diagnose.signatures import load_signatures  # noqa: E402
from traindoctor.monitor.curves import diagnose_curves  # noqa: E402

WILD = ROOT / "tests" / "diagnose" / "data" / "wild"
REPORT = ROOT / "bench" / "cv_by_batch.md"
BATCHES = ((1, 270), (271, 345), (346, 453), (454, 582), (583, 724), (725, 867), (868, 929), (930, 992), (993, 1063))  # the README's collection batches
FAMILY = model_bench.FAMILY


def batch_of(name: str) -> int | None:
    """The batch (0-3) of a wild case id ("wild/w123", "w123", with or without "#cut"); None otherwise."""
    case = name.split("/")[-1].split("#")[0]
    if not case.startswith("w") or not case[1:].isdigit():
        return None
    number = int(case[1:])
    found = next((i for i, (lo, hi) in enumerate(BATCHES) if lo <= number <= hi), None)
    if found is None:
        raise ValueError(f"{case} is in no batch of BATCHES: add its collection batch there")
    return found


def rules_fired(text: str) -> set[str]:
    """The hand-written rules that fire on a log: each signature pattern (`sig:<id>:<n>`, searched
    in its exception messages and its whole text) and each partial-evidence clue (`clue:<id>`)."""
    lines = normalize(text)
    chains = parse_chains(lines)
    haystacks = [exception_text(b) for chain in chains for b in chain.blocks if b.exception is not None]
    haystacks.append("\n".join(line.text for line in lines))
    fired = {f"sig:{s.id}:{i}" for s in load_signatures() for i, pattern in enumerate(s.patterns)
             if any(pattern.search(h) for h in haystacks)}
    settings, clues = partial._catalog()
    innermost = int(settings.get("innermost", 4))
    frame_texts = [f"{f.path} {f.function} {f.code or ''}" for chain in chains for f in chain.frames[-innermost:]]
    fired |= {f"clue:{c.id}" for c in clues if partial._match(c, frame_texts, lines) is not None}
    return fired


def batch_only_rules(firings: dict[str, set[str]], held: int) -> set[str]:
    """Rules that fire on dev pastes of batch `held` and on no other labelled log: the ones that
    would not be there had that batch not been read (approximately: a general rule that happens to
    fire only there is removed too, so this errs low)."""
    inside = set().union(*(f for name, f in firings.items() if batch_of(name) == held))
    outside = set().union(*(f for name, f in firings.items() if batch_of(name) != held))
    return inside - outside


@contextlib.contextmanager
def without_rules(removed: set[str]):
    """The engine without these signature patterns and clues."""
    import dataclasses

    def kept(signature):
        patterns = tuple(p for i, p in enumerate(signature.patterns) if f"sig:{signature.id}:{i}" not in removed)
        return dataclasses.replace(signature, patterns=patterns)

    exception_sigs = tuple(s for s in map(kept, signatures.exception_signatures()) if s.patterns)
    log_sigs = tuple(s for s in map(kept, signatures.log_signatures()) if s.patterns)
    settings, clues = partial._catalog()
    saved = (select._exception_signatures, select.log_signatures, partial._catalog, partial.exception_signatures,
             partial._literal_runs)
    partial.exception_signatures = lambda: exception_sigs
    runs = partial._literal_runs.__wrapped__()
    select._exception_signatures = lambda: exception_sigs
    select.log_signatures = lambda: log_sigs
    partial._catalog = lambda: (settings, tuple(c for c in clues if f"clue:{c.id}" not in removed))
    partial._literal_runs = lambda: runs
    try:
        yield
    finally:
        (select._exception_signatures, select.log_signatures, partial._catalog, partial.exception_signatures,
         partial._literal_runs) = saved


@contextlib.contextmanager
def fitted(weights: dict, curves: dict[str, list] | None):
    """The engine with these evidence-model counts and calibration maps (None: the committed maps)."""
    saved = (evidence_model._weights, calibration_map._points)
    evidence_model._weights = lambda: weights
    if curves is not None:
        calibration_map._points = lambda source="signature": tuple(curves.get(source) or ())
    try:
        yield
    finally:
        evidence_model._weights, calibration_map._points = saved


def fit_calibration(excluded: set[str]) -> dict[str, list]:
    """The signature and partial maps fitted on the predictions of every labelled log not excluded
    (run with whatever evidence model is in place)."""
    curves = {}
    for source in ("signature", "partial"):
        preds = [p for p in calibration_bench.predictions(source) if p[0] not in excluded]
        curves[source] = calibration_bench.fit([(raw, right) for _, raw, right, *_ in preds])
    return curves


def score(labels: list[dict]) -> list[dict]:
    """One row per paste: what `traindoctor diagnose` answers, and whether kind and frame are right."""
    rows = []
    for label in labels:
        text = (WILD / label["file"]).read_text(encoding="utf-8")
        diagnosis = diagnose_curves(text, diagnose_text(text, correlate=False))
        location = diagnosis.location
        got = None if location is None else {"path": location.path, "line": location.line}
        rows.append({"id": label["id"], "want": label["class"], "kind": diagnosis.kind,
                     "confidence": diagnosis.confidence, "kind_ok": diagnosis.kind == label["class"],
                     "family_ok": diagnosis.kind == label["class"] or FAMILY.get(diagnosis.kind) == label["class"],
                     "frame_ok": got == label["frame"],
                     "signature": str(diagnosis.details.get("signature", ""))})
    return rows


def summary(rows: list[dict]) -> dict:
    n = max(1, len(rows))
    return {"n": len(rows), "kind": sum(r["kind_ok"] for r in rows) / n,
            "family": sum(r["family_ok"] for r in rows) / n, "frame": sum(r["frame_ok"] for r in rows) / n,
            "ece": model_bench.ece([(r["confidence"], r["kind_ok"]) for r in rows])}


def run(settings: dict) -> dict:
    """Leave-one-batch-out over the wild dev half (with and without the batch's own rules) and the
    fitted (in-sample) score."""
    dev = [e for e in model_bench.yaml.safe_load((WILD / "labels.yaml").read_text()) if e["split"] == "dev"]
    data = model_bench.items()
    temperature = settings.get("temperature", model_bench.committed_settings()["temperature"])
    fit_settings = {k: v for k, v in settings.items() if k != "temperature"}
    named = calibration_bench.labelled()
    firings = {name: rules_fired(path.read_text(encoding="utf-8", errors="replace")) for name, path, _ in named}
    firings.update({f"healthy/{p.name}": rules_fired(p.read_text(encoding="utf-8", errors="replace"))
                    for p in sorted((model_bench.DATA / "healthy").iterdir()) if p.is_file()})

    def fold(train_batches: set[int | None]) -> tuple[dict, dict]:
        weights = model_bench.fit([it for it in data if batch_of(it["name"]) in train_batches], temperature,
                                  **fit_settings)
        with fitted(weights, None):
            curves = fit_calibration({n for n, *_ in named if batch_of(n) not in train_batches})
        return weights, curves

    everything = {None, *range(len(BATCHES))}
    out: dict = {"folds": {}, "ablated": {}, "removed": {}}
    for held in range(len(BATCHES)):
        labels = [e for e in dev if batch_of(e["id"]) == held]
        if not labels:
            continue
        weights, curves = fold(everything - {held})
        removed = batch_only_rules(firings, held)
        out["removed"][held] = len(removed)
        with fitted(weights, curves):
            out["folds"][held] = score(labels)
            with without_rules(removed):
                out["ablated"][held] = score(labels)
    weights, curves = fold(everything)
    with fitted(weights, curves):
        out["fitted"] = score(dev)
    support = Counter(rule for fired in firings.values() for rule in fired)
    out["support"] = support
    out["pooled"] = [r for rows in out["folds"].values() for r in rows]
    out["ablated_pooled"] = [r for rows in out["ablated"].values() for r in rows]
    return out


def model_alone(settings: dict) -> tuple[float, float, int]:
    """The evidence model by itself on every held-out batch's wild dev pastes (and their cut copies),
    fitted without that batch: top-1 kind accuracy and mean log-loss of the labelled kind. It reads
    no rule, so the settings of the fit are chosen on this (bench/fit_evidence_model.py)."""
    data = model_bench.items()
    temperature = settings.get("temperature", model_bench.committed_settings()["temperature"])
    fit_settings = {k: v for k, v in settings.items() if k != "temperature"}
    right, loss, n = 0, 0.0, 0
    for held in range(len(BATCHES)):
        weights = model_bench.fit([it for it in data if batch_of(it["name"]) != held], temperature, **fit_settings)
        for item in data:
            if item["group"] and batch_of(item["name"]) == held:
                ranked = evidence_model.rank(item["features"], weights)
                right += ranked[0].kind == item["kind"]
                loss -= math.log(max(1e-6, next((r.probability for r in ranked if r.kind == item["kind"]), 0.0)))
                n += 1
    return right / n, loss / n, n


def report(result: dict, settings: dict) -> list[str]:
    lines = ["# Leave-one-batch-out estimate within the wild dev half", "",
             "Produced by `bench/cv_by_batch.py` (see its docstring). The wild test half is never read.", "",
             f"Settings: {settings or 'the committed ones (bench/fit_evidence_model.py)'}.", "",
             "A: the evidence model's counts and the calibration maps refitted without the dev pastes of one",
             "collection batch and scored on them. B: as A, and the signature patterns and clues that fire on",
             "that batch's dev pastes and on no other labelled log removed too (rules written for that batch;",
             "a general rule that only that batch happens to show goes too, so B errs low).", "",
             "| held out | n | A kind | A family | A frame | A ECE | B rules removed | B kind | B family | B frame | B ECE |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = [(f"batch {h + 1} ({lo:03d}-{hi:03d})", result["folds"][h], result["removed"][h], result["ablated"][h])
            for h, (lo, hi) in enumerate(BATCHES) if h in result["folds"]]
    rows.append(("pooled", result["pooled"], sum(result["removed"].values()), result["ablated_pooled"]))
    for name, plain, removed, ablated in rows:
        a, b = summary(plain), summary(ablated)
        lines.append(f"| {name} | {a['n']} | {a['kind']:.3f} | {a['family']:.3f} | {a['frame']:.3f} | {a['ece']:.3f} "
                     f"| {removed} | {b['kind']:.3f} | {b['family']:.3f} | {b['frame']:.3f} | {b['ece']:.3f} |")
    lines += ["", "| other scores | n | kind | family | frame | ECE |", "|---|---|---|---|---|---|"]
    for name, rows_ in (("all dev, fitted on all dev (in-sample)", result["fitted"]),):
        s = summary(rows_)
        lines.append(f"| {name} | {s['n']} | {s['kind']:.3f} | {s['family']:.3f} | {s['frame']:.3f} | {s['ece']:.3f} |")
    lines += ["", "Who answered the held-out pastes, and how often rightly (right / answered):", "",
              "| | a signature | a partial-evidence clue | the evidence model | `other` |", "|---|---|---|---|---|"]
    for title, pooled in (("A", result["pooled"]), ("B", result["ablated_pooled"])):
        by_source = {source: [r["kind_ok"] for r in pooled if _source(r) == source]
                     for source in ("signature", "partial", "model", "other")}
        lines.append(f"| {title} | " + " | ".join(f"{sum(v)}/{len(v)}" for v in by_source.values()) + " |")
    support = result["support"]
    single = sorted(rule for rule, count in support.items() if count == 1)
    total = sum(len(sig.patterns) for sig in load_signatures()) + len(partial._catalog()[1])
    lines += ["", f"Rules (signature patterns and clues: {total}) by how many labelled logs fire them: "
              f"{len(support)} fire on at least one, {len(single)} on exactly one (likely written for that "
              "one paste's wording): " + ", ".join(f"`{rule}`" for rule in single)]
    for title, pooled in (("A", result["pooled"]), ("B", result["ablated_pooled"])):
        misses = [r for r in pooled if not r["kind_ok"]]
        lines += ["", f"{title}: held-out kind misses {len(misses)}, {sum(r['kind'] == 'other' for r in misses)} "
                  "answered `other`. By label: " + ", ".join(
                      f"{k} {n}" for k, n in Counter(r["want"] for r in misses).most_common())]
    return lines


def _source(row: dict) -> str:
    if row["kind"] == "other":
        return "other"
    if row["signature"].startswith("partial:"):
        return "partial"
    return "model" if row["signature"] == "evidence-model" else "signature"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", action="append", default=[], help="a fit setting, name=value (not written)")
    parser.add_argument("--misses", action="store_true")
    parser.add_argument("--model-alone", action="store_true", help="only the model's own held-out top-1 and log-loss")
    args = parser.parse_args()
    settings = {}
    for pair in args.set:
        name, value = pair.split("=", 1)
        settings[name] = value.split(",") if name in ("drop",) else float(value)
    if args.model_alone:
        top1, loss, n = model_alone(settings)
        print(f"model alone, leave-one-batch-out: top-1 {top1:.3f}, log-loss {loss:.3f} (n {n})")
        return
    result = run(settings)
    lines = report(result, settings)
    if args.misses:
        for title, pooled in (("A", result["pooled"]), ("B", result["ablated_pooled"])):
            lines += ["", f"{title} held-out misses:"] + [
                f"- {r['id']}: {r['kind']} ({r['confidence']:.2f}, want {r['want']}; {r['signature']})"
                for r in pooled if not r["kind_ok"]]
    print("\n".join(lines))
    if not settings:
        REPORT.write_text("\n".join(report(result, settings)) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
