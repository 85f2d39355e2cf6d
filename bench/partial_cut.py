"""Partial evidence on dev pastes cut before their message (issue 28).

Every dev paste the engine diagnoses right from its message (wild dev half, tests/diagnose/data/dev,
tests/diagnose/data/fresh) is cut after its last frame, as people paste when the message stays in
the issue's title. `traindoctor diagnose` (the engine, then the curves) reads only the frames and
lines left; this prints how many cut pastes get a kind other than `other`, how many of those name
the kind the message named, and, from partial.infer, how often each evidence clue's kind was
right. Dev only: the wild test half is never read here.

    .venv/bin/python bench/partial_cut.py [-v]
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "diagnose"))

from diagnose_helpers import DATA, load_yaml  # noqa: E402
from traindoctor.diagnose import diagnose_text  # noqa: E402
from traindoctor.monitor.curves import diagnose_curves  # noqa: E402
from traindoctor.diagnose.normalize import normalize  # noqa: E402
from traindoctor.diagnose.parse import parse_chains  # noqa: E402
from traindoctor.diagnose.partial import infer  # noqa: E402

DEV_SETS = (("wild", "dev"), ("dev", None), ("fresh", None))


def dev_cases() -> list[tuple[str, dict]]:
    cases = []
    for folder, split in DEV_SETS:
        labels = DATA / folder / "labels.yaml"
        for label in load_yaml(labels) if labels.exists() else []:
            if split is None or label.get("split") == split:
                cases.append((folder, label))
    return cases


def cut_before_message(text: str) -> str | None:
    """The normalised paste up to the code line of its last frame (None: no frame, no message)."""
    lines = normalize(text)
    chains = [c for c in parse_chains(lines) if c.frames and c.final is not None and c.final.exception is not None]
    if not chains:
        return None
    last = chains[-1].frames[-1]
    header = next((i for i in range(len(lines) - 1, -1, -1)
                   if f"line {last.line}" in lines[i].text and "File" in lines[i].text), None)
    if header is None:
        return None
    return "\n".join(line.text for line in lines[:header + 2])


def main(verbose: bool) -> None:
    per_clue: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    total = answered = right = 0
    silent: collections.Counter[str] = collections.Counter()
    for folder, label in dev_cases():
        text = (DATA / folder / label["file"]).read_text(encoding="utf-8", errors="replace")
        full = diagnose_text(text, correlate=False)
        if full.kind != label["class"] or full.exception is None:
            continue
        cut = cut_before_message(text)
        if cut is None:
            continue
        lines = normalize(cut)
        found = infer(lines, parse_chains(lines))
        total += 1
        answer = diagnose_curves(cut, diagnose_text(cut, correlate=False)).kind
        if answer != "other":
            answered += 1
            right += answer == label["class"]
        else:
            silent[label["class"]] += 1
        counted: set[str] = set()
        for hypothesis in found:
            for clue in hypothesis.clues:
                if clue not in counted:
                    counted.add(clue)
                    per_clue[clue][0] += 1
                    per_clue[clue][1] += hypothesis.kind == label["class"]
        if verbose:
            print(f"  {label['id']}: {label['class']} -> {answer} (clues: {[h.kind for h in found][:3]})")
    print(f"dev pastes cut before their message: {total}; a kind named for {answered}; "
          f"the message's kind for {right} ({right / max(1, answered):.2f} of answered, {right / max(1, total):.2f} of all)")
    for clue, (fired, hits) in sorted(per_clue.items(), key=lambda item: -item[1][0]):
        print(f"  {clue:32s} fired {fired:3d}  kind right {hits:3d}  ({hits / fired:.2f})")
    print("left `other`, by the kind of their message:", dict(silent.most_common()))


if __name__ == "__main__":
    main("-v" in sys.argv)
