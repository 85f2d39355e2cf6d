"""Correlation: lint findings in the files on the stack that explain the failure."""

from __future__ import annotations

from pathlib import Path

from traindoctor.diagnose import diagnose_text

ACCUMULATING = '''import torch
from torch import nn

model = nn.Linear(512, 512).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0
for step in range(10_000):
    x = torch.randn(4096, 512, device="cuda")
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    total += loss
'''

OOM_LOG = '''Traceback (most recent call last):
  File "/cluster/home/ana/run/train_acc.py", line 8, in <module>
    x = torch.randn(4096, 512, device="cuda")
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 MiB. GPU 0 has a total capacity of 15.77 GiB of which 2.12 MiB is free. Including non-PyTorch memory, this process has 15.76 GiB memory in use. Of the allocated memory 15.40 GiB is allocated by PyTorch, and 3.10 MiB is reserved by PyTorch but unallocated.
'''


def test_oom_is_explained_by_loss_accumulation(tmp_path: Path) -> None:
    (tmp_path / "train_acc.py").write_text(ACCUMULATING)
    # The log comes from another machine: the absolute path is matched by its tail under base_dir.
    diagnosis = diagnose_text(OOM_LOG, base_dir=tmp_path)
    assert diagnosis.kind == "cuda-oom"
    codes = [f.code for f in diagnosis.related_findings]
    assert "TRN101" in codes, codes
    finding = diagnosis.related_findings[codes.index("TRN101")]
    assert finding.range.start.line + 1 == 13  # `total += loss`
    assert any("TRN101" in e for e in diagnosis.evidence)
    assert diagnosis.details["line_to_change"]["line"] == 13
    assert "13" in diagnosis.fixes[0].detail
    without = diagnose_text(OOM_LOG, base_dir=tmp_path, correlate=False)
    assert diagnosis.confidence > without.confidence
    assert not without.related_findings


def test_unrelated_findings_are_not_attached(tmp_path: Path) -> None:
    (tmp_path / "train_acc.py").write_text(ACCUMULATING)
    shape_log = OOM_LOG.splitlines()[:3] + ["RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)"]
    diagnosis = diagnose_text("\n".join(shape_log), base_dir=tmp_path)
    assert diagnosis.kind == "shape-mismatch"
    assert diagnosis.related_findings == ()


def test_missing_files_are_skipped(tmp_path: Path) -> None:
    diagnosis = diagnose_text(OOM_LOG, base_dir=tmp_path)
    assert diagnosis.kind == "cuda-oom" and diagnosis.related_findings == ()
