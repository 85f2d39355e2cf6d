"""Calibrate diagnosis confidence on the labelled logs and report a reliability table.

The labelled set: the real tracebacks of tests/diagnose/data/dev and fresh (labels.yaml;
fresh: 65 from issue threads, labelled before the tool ran on them; 18 from reserved sources were removed on 2026-12-06) and the real-shaped logs of tests/diagnose/data/formats and kinds, and the real PyTorch stderr of
tests/diagnose/data/real (expected.yaml).
Every hypothesis of every diagnosis is one prediction: its raw confidence (the signature's
number, adjusted by the engine) and whether its kind is the labelled one.

    .venv/bin/python bench/calibration.py          # reliability table of the committed map
    .venv/bin/python bench/calibration.py --fit    # refit rules/calibration.yaml, then report

The fit is isotonic (pool adjacent violators) with add-one-half smoothing per block, so a
block of 40 right answers maps to 0.99, not 1.0. The table is reported in-sample, 2-fold
cross-validated (fit on one half of the files, measured on the other) and leave-one-file-out
(fit on every other file); the cross-validated numbers are the honest ones.
Output: bench/calibration.md.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "diagnose" / "data"
MAP = ROOT / "rules" / "calibration.yaml"
BINS = 10


def labelled() -> list[tuple[str, Path, str]]:
    items = []
    for folder in ("dev", "fresh"):
        for entry in yaml.safe_load((DATA / folder / "labels.yaml").read_text()):
            items.append((f"{folder}/{entry['id']}", DATA / folder / entry["file"], entry["class"]))
    for folder in ("formats", "kinds", "real"):
        for entry in yaml.safe_load((DATA / folder / "expected.yaml").read_text()):
            items.append((f"{folder}/{entry['file']}", DATA / folder / entry["file"], entry["kind"]))
    # the wild corpus's dev half only: its test half is never fitted on (issue 28)
    for entry in yaml.safe_load((DATA / "wild" / "labels.yaml").read_text()):
        if entry["split"] == "dev":
            items.append((f"wild/{entry['id']}", DATA / "wild" / entry["file"], entry["class"]))
    return items


def predictions(source: str | None = None) -> list[tuple[str, float, bool, bool, str]]:
    """(file id, raw confidence, right kind, is the top hypothesis, kind) for every hypothesis,
    in the diagnosis's order; with `source`, only the diagnoses whose confidence comes from that
    map ("signature": a message was read, "partial": inferred without it, "model": the evidence
    model's own probability)."""
    from traindoctor.diagnose import diagnose_text

    out = []
    for name, path, label in labelled():
        diagnosis = diagnose_text(path.read_bytes(), correlate=False)
        signature = str(diagnosis.details.get("signature", ""))
        # the evidence model's probability is its own (tempered, cross-validated by
        # bench/fit_evidence_model.py): no map of this file applies to it
        of = "model" if signature == "evidence-model" else "partial" if signature.startswith("partial:") else "signature"
        if source is not None and of != source:
            continue
        raws = diagnosis.details.get("raw_confidences") or [diagnosis.confidence]
        for index, (hypothesis, raw) in enumerate(zip(diagnosis.hypotheses, raws)):
            out.append((name, float(raw), hypothesis.kind == label, index == 0, hypothesis.kind))
    return out


def confidences(preds, curve_of) -> list[tuple[float, bool]]:
    """What the engine reports for each prediction when `curve_of(file id)` is the map:
    calibrated, then made coherent within each diagnosis (server/.../calibration.coherent)."""
    from traindoctor.diagnose.calibration import coherent

    out: list[tuple[float, bool]] = []
    by_file: dict[str, list] = {}
    for pred in preds:
        by_file.setdefault(pred[0], []).append(pred)
    for name, group in by_file.items():
        curve = curve_of(name)
        shares = coherent([kind for *_, kind in group], [apply(curve, raw) for _, raw, *_ in group])
        out += [(share, right) for share, (_, _, right, *_) in zip(shares, group)]
    return out


def fit(points: list[tuple[float, bool]]) -> list[tuple[float, float]]:
    """Isotonic regression of correctness on raw confidence -> [(raw, calibrated)]."""
    blocks: list[list[float]] = []  # [sum_raw, hits, n]
    for raw, right in sorted(points):
        blocks.append([raw, float(right), 1.0])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] >= blocks[-1][1] / blocks[-1][2]:
            last = blocks.pop()
            for k in range(3):
                blocks[-1][k] += last[k]
    return [(round(s / n, 4), round((h + 0.5) / (n + 1), 4)) for s, h, n in blocks]


def apply(curve: list[tuple[float, float]], raw: float) -> float:
    if not curve:
        return raw
    if raw <= curve[0][0]:
        return curve[0][1]
    for (x0, y0), (x1, y1) in zip(curve, curve[1:]):
        if raw <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (raw - x0) / (x1 - x0)
    return curve[-1][1]


def reliability(scored: list[tuple[float, bool]]) -> tuple[list[tuple[str, int, float, float]], float]:
    rows, ece, total = [], 0.0, len(scored)
    for b in range(BINS):
        lo, hi = b / BINS, (b + 1) / BINS
        members = [(c, r) for c, r in scored if lo <= c < hi or (b == BINS - 1 and c == 1.0)]
        if not members:
            continue
        confidence = sum(c for c, _ in members) / len(members)
        accuracy = sum(r for _, r in members) / len(members)
        rows.append((f"{lo:.1f}-{hi:.1f}", len(members), confidence, accuracy))
        ece += len(members) / total * abs(accuracy - confidence)
    return rows, ece


def _table(title: str, rows, ece: float) -> list[str]:
    out = [f"### {title}", "", "| confidence bin | hypotheses | mean confidence | accuracy | gap |",
           "|---|---|---|---|---|"]
    out += [f"| {b} | {n} | {c:.2f} | {a:.2f} | {abs(a - c):.2f} |" for b, n, c, a in rows]
    out += ["", f"Expected calibration error (ECE): **{ece:.3f}**", ""]
    return out


def _half(name: str) -> int:
    return int(hashlib.sha1(name.encode()).hexdigest(), 16) % 2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="refit rules/calibration.yaml")
    args = parser.parse_args()
    preds = predictions("signature")
    curve = fit([(raw, right) for _, raw, right, *_ in preds])
    partial_preds = predictions("partial")
    partial_curve = fit([(raw, right) for _, raw, right, *_ in partial_preds])
    if args.fit:
        MAP.write_text("# Raw diagnosis confidence -> calibrated confidence ([raw, calibrated] points, linear\n"
                       "# in between). Fitted by bench/calibration.py --fit on the labelled logs (the wild corpus's\n"
                       "# dev half included, its test half never); do not edit. `points`: a signature's confidence;\n"
                       "# `partial_points`: a partial-evidence score (the message missing, diagnose/partial.py).\n"
                       + yaml.safe_dump({"points": [list(p) for p in curve],
                                         "partial_points": [list(p) for p in partial_curve]},
                                        default_flow_style=None))
    partial_rows, partial_ece = reliability(confidences(partial_preds, lambda name: partial_curve))
    in_sample = confidences(preds, lambda name: curve)
    half_curves = [fit([(raw, right) for name, raw, right, *_ in preds if _half(name) != held]) for held in (0, 1)]
    cross = confidences(preds, lambda name: half_curves[_half(name)])
    files = sorted({name for name, *_ in preds})
    without = {held: fit([(raw, right) for name, raw, right, *_ in preds if name != held]) for held in files}
    leave_one_out = confidences(preds, lambda name: without[name])
    raw_scored = [(raw, right) for _, raw, right, *_ in preds]
    top = [right for _, _, right, first, _ in preds if first]
    lines = ["# Diagnosis confidence calibration", "",
             f"Labelled logs: {len(files)} (tests/diagnose/data/dev, fresh, formats, kinds, real, wild dev half); "
             f"hypotheses scored: "
             f"{len(preds)} (top-1 accuracy {sum(top) / max(1, len(top)):.2f}).",
             "Produced by `bench/calibration.py`; the map is rules/calibration.yaml. A reported confidence is",
             "the map's value, made coherent within its diagnosis (the kinds' confidences sum to at most 1).",
             "The engine was developed on these logs: cross-validation holds files out of the map's fit, not",
             "out of the signatures' development, so the numbers are optimistic for logs it has never seen.", ""]
    for title, scored in (("Raw signature confidence (before calibration)", raw_scored),
                          ("Calibrated, 2-fold cross-validated (fit on one half of the files, scored on the other)",
                           cross),
                          ("Calibrated, leave-one-file-out (fit on all other files, scored on the one left out)",
                           leave_one_out),
                          ("Calibrated, in-sample (the committed map on all files)", in_sample)):
        rows, ece = reliability(scored)
        lines += _table(title, rows, ece)
    lines += _table(f"Partial evidence ({len({n for n, *_ in partial_preds})} logs without their message), "
                    "calibrated in-sample by its own map", partial_rows, partial_ece)
    report = "\n".join(lines)
    (ROOT / "bench" / "calibration.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
