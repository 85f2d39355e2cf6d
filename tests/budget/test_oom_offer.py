"""A CUDA OOM in a script of the workspace offers `traindoctor budget` (it is offered, never run)."""

from __future__ import annotations

from traindoctor.diagnose import diagnose_text

LOG = """Traceback (most recent call last):
  File "{path}", line 3, in <module>
    loss = model(x).sum()
  File "/usr/lib/python3/site-packages/torch/nn/modules/module.py", line 1532, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 GiB \
of which 1.10 GiB is free. Including non-PyTorch memory, this process has 22.53 GiB memory in use. Of the allocated \
memory 21.80 GiB is allocated by PyTorch, and 301.20 MiB is reserved by PyTorch but unallocated.
"""


def test_an_oom_in_a_workspace_script_offers_the_estimate(tmp_path):
    script = tmp_path / "scripts" / "train.py"
    script.parent.mkdir()
    script.write_text("import torch\nmodel = torch.nn.Linear(4, 4)\nloss = model(torch.ones(4)).sum()\n")
    diagnosis = diagnose_text(LOG.format(path=script), base_dir=tmp_path)
    assert diagnosis.kind == "cuda-oom"
    offer = next(fix for fix in diagnosis.fixes if fix.title == "Estimate what fits")
    assert offer.detail.startswith("traindoctor budget --gpu-memory 23.64GiB -- python scripts/train.py")
    assert diagnosis.details["budget"]["command"][-2:] == ["python", "scripts/train.py"]
    assert diagnosis.details["budget"]["script"] == str(script)


def test_no_offer_for_a_script_outside_the_workspace(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = tmp_path / "train.py"
    script.write_text("import torch\n\n\n")
    diagnosis = diagnose_text(LOG.format(path=script), base_dir=elsewhere)
    assert diagnosis.kind == "cuda-oom"
    assert all(fix.title != "Estimate what fits" for fix in diagnosis.fixes)
    assert "budget" not in diagnosis.details
