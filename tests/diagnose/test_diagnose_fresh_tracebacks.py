"""Fresh real tracebacks from public issue threads (data/fresh/labels.yaml), labelled before the
tool saw them: the held-out estimate of issue 12. Scored as a set, like the held-out sets: the
kind accuracy and the user-frame accuracy must stay at or above what was measured.

Run as a script to print the scores and every miss:
    .venv/bin/python tests/diagnose/test_diagnose_fresh_tracebacks.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import pytest  # noqa: E402

from traindoctor.diagnose import diagnose_text  # noqa: E402

from diagnose_helpers import DATA, load_yaml  # noqa: E402

FRESH = DATA / "fresh"
# Measured on all 83 after the fixes of branch i12held. Before them (main at ef1a634): batch 1
# (f*, the 50 the first fixes were made from) kind 0.76, frame 0.92. Batches collected later and
# scored before any further change: batch 2 (g*, 18) kind 0.89, frame 1.00 (main: 0.67, 1.00);
# batch 3 (h*, 5) kind 0.80, frame 0.60; batch 4 (i*, 10) kind 1.00, frame 0.90. Each batch's
# misses then got general fixes. On 2026-12-06, 18 cases whose threads or repositories
# /work/shared/HELD-OUT.md reserves were removed (the three known misses among them); all 65 left
# are right. Every case here has been tuned on: this set guards against regressions, it measures
# nothing unseen.
KIND_ACCURACY = 1.0
FRAME_ACCURACY = 1.0
# Misses left, with their cause; an entry that starts passing must leave this list (strict xfail).
KNOWN_MISSES: dict[str, str] = {}

def score(folder: Path = FRESH, batch: int | None = None) -> tuple[float, float, list[str]]:
    """(kind accuracy, user-frame accuracy, one line per miss) over a folder's labels.yaml
    (only one `batch` of it when given; entries without one are batch 1)."""
    labels = [entry for entry in load_yaml(folder / "labels.yaml")
              if batch is None or entry.get("batch", 1) == batch]
    kinds = frames = 0
    misses = []
    for label in labels:
        diagnosis = diagnose_text((folder / label["file"]).read_text(encoding="utf-8"), correlate=False)
        location = diagnosis.location
        got = None if location is None else {"path": location.path, "line": location.line}
        kind_ok = diagnosis.kind == label["class"]
        frame_ok = got == label["frame"]
        kinds += kind_ok
        frames += frame_ok
        if not (kind_ok and frame_ok):
            misses.append(
                f"{label['id']}: kind {diagnosis.kind} (want {label['class']})"
                + ("" if frame_ok else f", frame {got} (want {label['frame']})")
            )
    return kinds / len(labels), frames / len(labels), misses


LABELS = load_yaml(FRESH / "labels.yaml")


@pytest.mark.parametrize(
    "label",
    [pytest.param(entry, marks=pytest.mark.xfail(reason=KNOWN_MISSES[entry["id"]], strict=True))
     if entry["id"] in KNOWN_MISSES else entry for entry in LABELS],
    ids=[entry["id"] for entry in LABELS],
)
def test_fresh_traceback(label: dict) -> None:
    diagnosis = diagnose_text((FRESH / label["file"]).read_text(encoding="utf-8"), correlate=False)
    assert diagnosis.kind == label["class"], diagnosis.title
    location = diagnosis.location
    assert (None if location is None else {"path": location.path, "line": location.line}) == label["frame"]


def test_fresh_tracebacks_accuracy() -> None:
    kind_accuracy, frame_accuracy, misses = score()
    report = "\n".join(misses)
    assert kind_accuracy >= KIND_ACCURACY, report
    assert frame_accuracy >= FRAME_ACCURACY, report


if __name__ == "__main__":
    for batch in (1, 2, 3, 4, None):
        kind_accuracy, frame_accuracy, misses = score(batch=batch)
        print("\n".join(misses))
        print(f"batch {batch or 'all'}: kind {kind_accuracy:.2f}  user frame {frame_accuracy:.2f}\n")
