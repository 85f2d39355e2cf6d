"""Fit the evidence model (diagnose/evidence_model.py) on the labelled dev logs, and measure by
cross-validation within the wild corpus's dev half whether it generalises.

Training items: every labelled log bench/calibration.py uses (tests/diagnose/data/dev, fresh,
formats, kinds, real and the wild dev half; the wild test half is never read), the healthy logs
(`other`), and each of them cut after its last frame (bench/partial_cut.py: the paste whose
message stayed in the issue's title), labelled with the same kind. A feature's count per kind is
how many items of that kind show it; rules/evidence/evidence_weights.yaml keeps the counts, the
smoothing and the temperature (chosen by cross-validated log-loss).

Cross-validation: the wild dev half in K folds (by a hash of the case id); each fold is held out
of the counts (with its cut copies), and `traindoctor diagnose` runs on it with the counts of the
other folds. Reported: kind accuracy of the whole engine fitted (counts from all of dev) and
cross-validated, the engine without the model, and the model alone on held-out pastes (with
their message, and cut before it), which is how it does on wordings it never saw.

    .venv/bin/python bench/fit_evidence_model.py            # CV report only
    .venv/bin/python bench/fit_evidence_model.py --write    # also write evidence_weights.yaml
Output: bench/evidence_model.md.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
from collections import Counter, defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "diagnose"))

from calibration import labelled  # noqa: E402
from partial_cut import cut_before_message  # noqa: E402

from traindoctor.diagnose import diagnose_text, evidence_model  # noqa: E402
from traindoctor.diagnose.normalize import normalize  # noqa: E402
from traindoctor.diagnose.parse import parse_chains  # noqa: E402
from traindoctor.monitor.curves import diagnose_curves  # noqa: E402

DATA = ROOT / "tests" / "diagnose" / "data"
WEIGHTS = ROOT / "rules" / "evidence" / "evidence_weights.yaml"
REPORT = ROOT / "bench" / "evidence_model.md"
FOLDS = 5
ALPHA = 0.5
MIN_WORD_ITEMS = 2  # a message word shown by fewer training items is not counted
# The weight of the message words (and the innermost library frame's module and function) against the
# structural features, and how strongly a kind's rates are drawn towards the overall rate
# (evidence_model.rank; 0: add-alpha smoothing). Chosen by the model's own leave-one-batch-out log-loss
# on the wild dev pastes (bench/generalisation.md): add-alpha, word_scale 0.8: 1.726; shrink 4 with
# word_scale 0.5 / 0.8: 1.561 / 1.589; shrink 2, 0.5: 1.566 (the region is flat).
WORD_SCALE = 0.5
SHRINK = 4.0
TEMPERATURES = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
FAMILY = {"nan-onset": "nan-inf", "divergence": "nan-inf", "gradient-explosion": "nan-inf", "loss-spike": "nan-inf"}


def observed(text: str) -> dict[str, str]:
    lines = normalize(text)
    return evidence_model.observe(lines, parse_chains(lines))


def items() -> list[dict]:
    """(group, name, kind, features, cut) for every training item; group: the wild dev id or ''."""
    out = []
    sources = [(name, path, kind) for name, path, kind in labelled()]
    sources += [(f"healthy/{p.name}", p, "other") for p in sorted((DATA / "healthy").iterdir()) if p.is_file()]
    for name, path, kind in sources:
        text = path.read_text(encoding="utf-8", errors="replace")
        group = name if name.startswith("wild/") else ""
        out.append({"group": group, "name": name, "kind": kind, "features": observed(text), "cut": False,
                    "text": text})
        cut = cut_before_message(text)
        if cut is not None:
            out.append({"group": group, "name": name + "#cut", "kind": kind, "features": observed(cut),
                        "cut": True, "text": cut})
    return out


def committed_settings() -> dict:
    """The settings of the committed counts (evidence_weights.yaml), for a refit like them."""
    weights = yaml.safe_load(WEIGHTS.read_text(encoding="utf-8")) or {}
    return {"temperature": float(weights.get("temperature", 1.0))}


def fit(train: list[dict], temperature: float = 1.0, alpha: float = ALPHA, word_scale: float = WORD_SCALE,
        min_word_items: float = MIN_WORD_ITEMS, shrink: float = SHRINK) -> dict:
    """Per kind: its item count, how many show each feature, and how many show each message word
    that at least `min_word_items` items show."""
    kinds: dict[str, dict] = defaultdict(lambda: {"n": 0, "features": Counter(), "words": Counter()})
    word_df = Counter(f[5:] for item in train for f in item["features"] if f.startswith("word:"))
    kept = {word for word, count in word_df.items() if count >= min_word_items}
    for item in train:
        entry = kinds[item["kind"]]
        entry["n"] += 1
        entry["features"].update(f for f in item["features"] if not f.startswith("word:"))
        entry["words"].update(f[5:] for f in item["features"] if f.startswith("word:") and f[5:] in kept)
    return {"alpha": alpha, "shrink": shrink, "temperature": temperature, "word_scale": word_scale,
            "word_df": {w: word_df[w] for w in sorted(kept)},
            "kinds": {k: {"n": v["n"], "features": dict(sorted(v["features"].items())),
                          "words": dict(sorted(v["words"].items()))} for k, v in sorted(kinds.items())}}


def fold_of(name: str) -> int:
    return int(hashlib.sha1(name.encode()).hexdigest(), 16) % FOLDS


def engine_kind(text: str) -> tuple[str, float]:
    diagnosis = diagnose_curves(text, diagnose_text(text, correlate=False))
    return diagnosis.kind, diagnosis.confidence


def ece(pairs: list[tuple[float, bool]], bins: int = 10) -> float:
    total = 0.0
    for b in range(bins):
        inside = [(c, ok) for c, ok in pairs if b / bins <= c < (b + 1) / bins or (b == bins - 1 and c == 1.0)]
        if inside:
            total += len(inside) * abs(sum(c for c, _ in inside) / len(inside) - sum(ok for _, ok in inside) / len(inside))
    return total / max(1, len(pairs))


def main(write: bool) -> None:
    data = items()
    wild = [it for it in data if it["group"]]
    wild_full = [it for it in wild if not it["cut"]]
    label_of = {it["name"]: it["kind"] for it in wild_full}

    # the temperature: cross-validated log-loss of the model's posterior on held-out wild items
    losses = {t: 0.0 for t in TEMPERATURES}
    # one fit per fold: the temperature only divides the scores
    fold_fits = {fold: fit([it for it in data if not (it["group"] and fold_of(it["group"]) == fold)])
                 for fold in range(FOLDS)}
    for fold in range(FOLDS):
        held = [it for it in wild if fold_of(it["group"]) == fold]
        for t in TEMPERATURES:
            weights = dict(fold_fits[fold], temperature=t)
            for it in held:
                probs = {r.kind: r.probability for r in evidence_model.rank(it["features"], weights)}
                losses[t] -= math.log(max(1e-6, probs.get(it["kind"], 0.0)))
    temperature = min(losses, key=losses.get)

    # the engine with and without the model, fitted and cross-validated; the model alone held out
    rows = {"without": [], "fitted": [], "cv": []}
    alone = {"full": [], "cut": []}
    fitted_weights = fit(data, temperature)
    original = evidence_model._weights
    try:
        evidence_model._weights = lambda: {}
        rows["without"] = [(it["name"], *engine_kind(it["text"])) for it in wild_full]
        evidence_model._weights = lambda: fitted_weights
        rows["fitted"] = [(it["name"], *engine_kind(it["text"])) for it in wild_full]
        for fold in range(FOLDS):
            weights = dict(fold_fits[fold], temperature=temperature)
            evidence_model._weights = lambda w=weights: w
            for it in wild:
                if fold_of(it["group"]) != fold:
                    continue
                top = evidence_model.rank(it["features"], weights)[0]
                alone["cut" if it["cut"] else "full"].append((top.probability, top.kind == it["kind"]))
                if not it["cut"]:
                    rows["cv"].append((it["name"], *engine_kind(it["text"])))
        # no signature reads any message (every wording unknown, as on a test paste whose wording
        # the signatures never saw): the clues alone, then the clues and the model (cross-validated)
        from traindoctor.diagnose import select, signatures

        saved = (select._exception_signatures, select.log_signatures)
        select._exception_signatures = lambda: ()
        select.log_signatures = lambda: ()
        try:
            evidence_model._weights = lambda: {}
            rows["unread-without"] = [(it["name"], *engine_kind(it["text"])) for it in wild_full]
            rows["unread-cv"] = []
            for fold in range(FOLDS):
                weights = dict(fold_fits[fold], temperature=temperature)
                evidence_model._weights = lambda w=weights: w
                rows["unread-cv"] += [(it["name"], *engine_kind(it["text"])) for it in wild_full
                                      if fold_of(it["group"]) == fold]
        finally:
            select._exception_signatures, select.log_signatures = saved
            del signatures
    finally:
        evidence_model._weights = original

    def accuracy(row: list) -> tuple[float, float, float]:
        right = [(c, kind == label_of[name]) for name, kind, c in row]
        family = sum(ok or FAMILY.get(kind) == label_of[name] for (name, kind, _), (_, ok) in zip(row, right))
        return sum(ok for _, ok in right) / len(right), family / len(right), ece(right)

    lines = ["# Evidence model: fitted on dev, cross-validated within dev", "",
             "Produced by `bench/fit_evidence_model.py` (see its docstring); the weights are "
             "rules/evidence/evidence_weights.yaml, the vocabulary rules/evidence/features.yaml.", "",
             f"Training items: {len(data)} ({sum(not it['cut'] for it in data)} labelled logs and "
             f"{sum(it['cut'] for it in data)} copies cut before their message); wild dev half: "
             f"{len(wild_full)} pastes in {FOLDS} folds. Temperature (CV log-loss): {temperature}.", "",
             "| wild dev half, `traindoctor diagnose` | kind | family | ECE |", "|---|---|---|---|"]
    for label, key in (("without the evidence model", "without"), ("with it, counts fitted on all of dev", "fitted"),
                       (f"with it, {FOLDS}-fold cross-validated (counts without the fold)", "cv")):
        kind, family, calibration = accuracy(rows[key])
        lines.append(f"| {label} | {kind:.3f} | {family:.3f} | {calibration:.3f} |")
    lines += ["", "The same pastes when no signature reads any message (every wording unknown to the signatures, "
              "as a new wording is; the frames and lines are still read):", "",
              "| wild dev half, signatures off | kind | family | ECE |", "|---|---|---|---|"]
    for label, key in (("partial-evidence clues only", "unread-without"),
                       (f"clues and the evidence model, {FOLDS}-fold cross-validated", "unread-cv")):
        kind, family, calibration = accuracy(rows[key])
        lines.append(f"| {label} | {kind:.3f} | {family:.3f} | {calibration:.3f} |")
    lines += ["", "The model alone, on held-out wild dev pastes (no signature: how it reads a wording it never saw):", "",
              "| held-out pastes | n | top-1 kind | ECE |", "|---|---|---|---|"]
    for key, label in (("full", "with their message"), ("cut", "cut before their message")):
        pairs = alone[key]
        lines.append(f"| {label} | {len(pairs)} | {sum(ok for _, ok in pairs) / max(1, len(pairs)):.3f} | {ece(pairs):.3f} |")
    before = {name: kind for name, kind, _ in rows["without"]}
    after = {name: kind for name, kind, _ in rows["cv"]}
    changed = [(name, before[name], after[name], label_of[name]) for name in sorted(after) if before[name] != after[name]]
    lines += ["", "Wild dev pastes whose kind the model changes (cross-validated):", ""]
    lines += [f"- {name}: {before} -> {after} (label {want})" for name, before, after, want in changed] or ["- none"]
    REPORT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    if write:
        header = ("# Counts of the evidence model (diagnose/evidence_model.py): per kind, how many labelled dev\n"
                  "# items show each feature of features.yaml. Written by bench/fit_evidence_model.py --write\n"
                  "# (dev logs only, the wild test half never); do not edit.\n")
        WEIGHTS.write_text(header + yaml.safe_dump(fitted_weights, sort_keys=False), encoding="utf-8")
        print(f"wrote {WEIGHTS.relative_to(ROOT)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true")
    main(parser.parse_args().write)
