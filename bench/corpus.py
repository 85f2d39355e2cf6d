"""Benchmark inputs: real code nobody here wrote, and training files of a given size.

`training_file(n)` builds an n-line training script out of the example scripts:
their classes and functions repeated under new names, the way large training
files grow (several models, losses and loops in one module).
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def torch_tree() -> Path:
    import torch

    return Path(torch.__file__).parent


def torch_subtrees() -> list[Path]:
    """A whole-tree workload: torch.nn, torch.optim and torch.utils.data (~200 files, ~2.8 MB)."""
    root = torch_tree()
    return [root / "nn", root / "optim", root / "utils" / "data"]


def training_file(lines: int) -> str:
    sources = [(REPO / "examples" / name).read_text() for name in ("train_classifier.py", "train_tagger.py")]
    header, bodies = [], []
    for source in sources:
        head, _, body = source.partition("\n\n\n")
        header.extend(line for line in head.splitlines() if line.startswith(("import", "from")))
        bodies.append(body.split('\nif __name__ == "__main__":')[0])
    out = sorted(set(header))
    copy = 0
    while len(out) < lines:
        for body in bodies:
            renamed = re.sub(r"\b(NoisyBlobs|MLP|train|Tagger|make_batch|main)\b", rf"\g<1>_{copy}", body)
            out.extend(["", ""] + renamed.splitlines())
        copy += 1
    # cut at the last top-level statement that fits, pad with comments
    cut = max(i for i in range(min(lines, len(out)) + 1)
              if i == len(out) or (out[i][:1].isalpha() or out[i].startswith("@")) and not out[i].startswith(("else", "elif", "except", "finally")))
    kept = out[:cut]
    kept += [f"# padding line {i}" for i in range(lines - len(kept))]
    return "\n".join(kept) + "\n"
