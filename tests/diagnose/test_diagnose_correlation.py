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
    # the correlated finding raises the raw score (both calibrate to the top of the scale)
    assert diagnosis.details["raw_confidences"][0] > without.details["raw_confidences"][0]
    assert diagnosis.confidence >= without.confidence
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


SEQ_LOSS = '''import torch
from torch import nn
from torch.nn.utils.rnn import pad_sequence


def step(model, tokens, targets):
    logits = model(tokens)
    trg = pad_sequence(targets, batch_first=True, padding_value=-1)
    criterion = nn.CrossEntropyLoss()
    loss = criterion(logits.view(-1, logits.size(-1)), trg.view(-1))
    return loss
'''

ASSERT_LOG = '''../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [3,0,0] Assertion `t >= 0 && t < n_classes` failed.
Traceback (most recent call last):
  File "seq_loss.py", line 10, in step
    loss = criterion(logits.view(-1, logits.size(-1)), trg.view(-1))
RuntimeError: CUDA error: device-side assert triggered
'''

FOCAL = '''import torch


def focal_loss(logits, target, gamma=2.0):
    p = torch.sigmoid(logits)
    pt = p * target + (1 - p) * (1 - target)
    return -((1 - pt) ** gamma * torch.log(pt)).mean()


def train(model, batches):
    for x, y in batches:
        loss = focal_loss(model(x), y)
        loss.backward()
'''

NAN_LOG = '''Traceback (most recent call last):
  File "focal.py", line 13, in train
    loss.backward()
  File "/venv/lib/python3.11/site-packages/torch/_tensor.py", line 626, in backward
    torch.autograd.backward(
RuntimeError: Function 'LogBackward0' returned nan values in its 0th output.
'''


def test_device_side_assert_is_explained_by_padding_in_the_loss(tmp_path: Path) -> None:
    (tmp_path / "seq_loss.py").write_text(SEQ_LOSS)
    diagnosis = diagnose_text(ASSERT_LOG, base_dir=tmp_path)
    assert diagnosis.kind == "device-side-assert"
    assert [f.code for f in diagnosis.related_findings] == ["TRN301"]
    assert diagnosis.related_findings[0].range.start.line + 1 == 9  # the loss built without ignore_index
    assert diagnosis.details["line_to_change"] == {"path": str(tmp_path / "seq_loss.py"), "line": 9, "code": "TRN301",
                                                   "fix": "Pass ignore_index=-1"}
    assert "label outside [0, n_classes)" in diagnosis.title


def test_nan_is_explained_by_unsafe_log(tmp_path: Path) -> None:
    (tmp_path / "focal.py").write_text(FOCAL)
    diagnosis = diagnose_text(NAN_LOG, base_dir=tmp_path)
    assert diagnosis.kind == "nan-inf"
    codes = [f.code for f in diagnosis.related_findings]
    assert codes and all(code.startswith("TRN4") for code in codes), codes
    assert any(f.range.start.line + 1 == 7 for f in diagnosis.related_findings)  # torch.log(pt)
