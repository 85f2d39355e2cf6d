"""Fixes that fit the evidence: the message's values and the user's code on the stack decide
which fix comes first, and fixes that change numerics or code are executed here."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import torch

from traindoctor.diagnose import diagnose_text

from diagnose_helpers import line_of, run_failing


def _traceback(path: Path, line: int, function: str, code: str, error: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "{path}", line {line}, in {function}\n'
        f"    {code}\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1751, in _call_impl\n'
        "    return forward_call(*args, **kwargs)\n"
        f"{error}\n"
    )


# --- device mismatch: which side is on the CPU decides the first fix --------------------------------

def test_model_on_cpu_batch_on_cuda_moves_the_model_first() -> None:
    text = _traceback(Path("train.py"), 40, "train_step", "out = model(x)",
                      "RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cuda:0, "
                      "different from other tensors on cpu (when checking argument in method wrapper_CUDA_addmm)")
    diagnosis = diagnose_text(text, correlate=False)
    assert diagnosis.fixes[0].title == "Move the model to cuda:0"
    assert all("Move the batch to the model device" != f.title for f in diagnosis.fixes)
    assert "weights are still on the CPU" in diagnosis.root_cause


def test_old_wording_model_on_cpu() -> None:
    text = _traceback(Path("train.py"), 40, "train_step", "out = model(x)",
                      "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
                      "cpu and cuda:0! (when checking argument for argument mat1 in method wrapper_addmm)")
    assert diagnose_text(text, correlate=False).fixes[0].title == "Move the model to cuda:0"


def test_batch_on_cpu_moves_the_batch_first() -> None:
    text = _traceback(Path("train.py"), 40, "train_step", "out = model(x)",
                      "RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cpu, "
                      "different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)")
    diagnosis = diagnose_text(text, correlate=False)
    assert diagnosis.fixes[0].title == "Move `mat1` to cuda:0"
    assert "Move the model to" not in " ".join(f.title for f in diagnosis.fixes)


def test_input_type_cuda_weight_type_cpu_moves_the_model() -> None:
    text = _traceback(Path("train.py"), 40, "train_step", "out = model(x)",
                      "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) "
                      "should be the same")
    assert diagnose_text(text, correlate=False).fixes[0].title == "Move the model to cuda"


# --- OOM inside an evaluation function: no_grad first ------------------------------------------------

_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "23.64 GiB of which 1.10 GiB is free. Including non-PyTorch memory, this process has 22.53 GiB memory in use. "
        "Of the allocated memory 21.90 GiB is allocated by PyTorch, and 180.00 MiB is reserved by PyTorch but "
        "unallocated.")


def _write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def test_oom_in_validate_puts_no_grad_first(tmp_path: Path) -> None:
    path = _write(tmp_path, "train.py", """\
        import torch

        def validate(model, loader):
            model.eval()
            total = 0.0
            for x, y in loader:
                out = model(x.cuda())
                total += (out.argmax(1) == y.cuda()).sum().item()
            return total
        """)
    text = _traceback(path, line_of(path, "out = model"), "validate", "out = model(x.cuda())", _OOM)
    diagnosis = diagnose_text(text, correlate=False, base_dir=tmp_path)
    assert diagnosis.fixes[0].title == "Run validate() under torch.no_grad()"


def test_oom_in_eval_already_without_grad_does_not_suggest_no_grad(tmp_path: Path) -> None:
    path = _write(tmp_path, "train.py", """\
        import torch

        @torch.no_grad()
        def validate(model, loader):
            model.eval()
            for x, y in loader:
                out = model(x.cuda())
        """)
    text = _traceback(path, line_of(path, "out = model"), "validate", "out = model(x.cuda())", _OOM)
    diagnosis = diagnose_text(text, correlate=False, base_dir=tmp_path)
    assert "no_grad" not in diagnosis.fixes[0].title


def test_oom_in_training_step_is_not_an_eval_problem(tmp_path: Path) -> None:
    path = _write(tmp_path, "train.py", """\
        def train_step(model, x, y, opt):
            loss = model(x).sum()
            loss.backward()
        """)
    text = _traceback(path, line_of(path, "loss = model"), "train_step", "loss = model(x).sum()", _OOM)
    diagnosis = diagnose_text(text, correlate=False, base_dir=tmp_path)
    assert "no_grad" not in diagnosis.fixes[0].title


# --- GAN: detach the generator output in the discriminator step ---------------------------------------

def test_gan_backward_twice_detaches_the_generator_output(tmp_path: Path) -> None:
    script = _write(tmp_path, "gan.py", """\
        import torch
        from torch import nn

        netG, netD = nn.Linear(4, 8), nn.Sequential(nn.Linear(8, 1), nn.Sigmoid())
        optimizer_D = torch.optim.SGD(netD.parameters(), lr=0.1)
        optimizer_G = torch.optim.SGD(netG.parameters(), lr=0.1)
        bce = nn.BCELoss()
        for step in range(2):
            fake = netG(torch.randn(16, 4))
            loss_D = bce(netD(fake), torch.zeros(16, 1))
            loss_D.backward()
            optimizer_D.step()
            loss_G = bce(netD(fake), torch.ones(16, 1))
            loss_G.backward()
            optimizer_G.step()
        """)
    log = run_failing([sys.executable, str(script)], tmp_path)
    diagnosis = diagnose_text(log, correlate=False, base_dir=tmp_path)
    assert diagnosis.kind == "graph-reuse"
    assert diagnosis.fixes[0].title == "Detach the generator output in the discriminator step"
    assert "fake.detach()" in diagnosis.fixes[0].detail


# --- in-place modification: the operation is located in the user's code -----------------------------

def test_inplace_op_on_sigmoid_output_is_located(tmp_path: Path) -> None:
    script = _write(tmp_path, "model.py", """\
        import torch

        def forward(x, w):
            h = torch.sigmoid(x @ w)
            scale = 2.0
            h += 1.0
            return h.sum()

        w = torch.randn(5, 5, requires_grad=True)
        forward(torch.randn(3, 5), w).backward()
        """)
    log = run_failing([sys.executable, str(script)], tmp_path)
    diagnosis = diagnose_text(log, correlate=False, base_dir=tmp_path)
    assert diagnosis.kind == "inplace-modification"
    first = diagnosis.fixes[0]
    assert first.title == f"Make `h += 1.0` out of place ({script}:{line_of(script, 'h += 1.0')})"
    assert "h = h + 1.0" in first.detail and "torch.sigmoid(x @ w)" in first.detail
    # the rewritten line really fixes it
    fixed = script.read_text().replace("h += 1.0", "h = h + 1.0")
    script.write_text(fixed)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_inplace_method_call_is_located_in_module_code() -> None:
    scripts = Path(__file__).parent / "scripts"
    log = run_failing([sys.executable, str(scripts / "inplace_modification.py")], scripts)
    diagnosis = diagnose_text(log, correlate=False, base_dir=scripts)
    assert "h.mul_(2)" in diagnosis.fixes[0].title
    assert "h = h.mul(2)" in diagnosis.fixes[0].detail


# --- masked -inf logits: the NaN fix is executed ------------------------------------------------------

_MASKED_ENTROPY = """\
import torch

torch.manual_seed(0)
torch.autograd.set_detect_anomaly(True)
logits = torch.randn(4, 6, requires_grad=True)
mask = torch.ones(4, 6, dtype=torch.bool)
mask[:, 4:] = False
masked = logits.masked_fill(~mask, float("-inf"))
p = torch.softmax(masked, dim=-1)
entropy = -(p * torch.log(p)).sum(-1)
entropy.mean().backward()
"""


def test_masked_entropy_nan_fix_is_executed_and_finite(tmp_path: Path) -> None:
    script = _write(tmp_path, "entropy.py", _MASKED_ENTROPY)
    log = run_failing([sys.executable, str(script)], tmp_path)
    diagnosis = diagnose_text(log, correlate=False, base_dir=tmp_path)
    assert diagnosis.kind == "nan-inf"
    first = diagnosis.fixes[0]
    assert first.title == "Mask with a finite value, not -inf"
    # Run the fix exactly as the diagnosis prints it: value and gradient are finite.
    logits = torch.randn(4, 6, requires_grad=True)
    mask = torch.ones(4, 6, dtype=torch.bool)
    mask[:, 4:] = False
    mask[0] = False  # a fully masked row too
    scope = {"torch": torch, "logits": logits, "mask": mask}
    exec(first.detail, scope)
    entropy = scope["entropy"]
    entropy.mean().backward()
    assert torch.isfinite(entropy).all()
    assert torch.isfinite(logits.grad).all()


def test_the_log_softmax_suggestion_alone_still_gives_nan() -> None:
    """Why the fix above fills with a finite value: log_softmax on -inf logits keeps the NaN."""
    logits = torch.randn(4, 6, requires_grad=True)
    mask = torch.ones(4, 6, dtype=torch.bool)
    mask[:, 4:] = False
    logp = torch.log_softmax(logits.masked_fill(~mask, float("-inf")), dim=-1)
    entropy = -(logp.exp() * logp).sum(-1)
    assert not torch.isfinite(entropy).all()


# --- checkpoint keys: the mapping is computed and applied --------------------------------------------

def test_checkpoint_key_mapping_is_computed_and_loads(tmp_path: Path) -> None:
    from torch import nn

    class Wrapped(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.module = nn.Module()
            self.module.features = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))

    model = Wrapped()
    state = {k.replace("module.features.", "features.module."): v for k, v in model.state_dict().items()}
    try:
        model.load_state_dict(state)
    except RuntimeError as exc:
        log = f"Traceback (most recent call last):\n  File \"load.py\", line 9, in <module>\n    model.load_state_dict(state)\nRuntimeError: {exc}\n"
    diagnosis = diagnose_text(log, correlate=False)
    assert diagnosis.kind == "checkpoint-mismatch"
    first = diagnosis.fixes[0]
    assert first.title == 'Rename the checkpoint keys: "features.module." -> "module.features."'
    assert "strict=False) would load none of these 4 tensors" in diagnosis.root_cause
    assert all("strict=False" not in f.detail for f in diagnosis.fixes)
    scope = {"state": state, "model": model}
    exec(first.detail, scope)  # loads with strict=True, or raises


def test_a_module_the_checkpoint_lacks_is_named_and_its_fix_loads_the_rest() -> None:
    # The model grew a submodule after the checkpoint was saved: only its keys are missing.
    from torch import nn

    class Captioner(nn.Module):
        def __init__(self, with_proposals: bool) -> None:
            super().__init__()
            self.encoder = nn.Linear(4, 8)
            if with_proposals:
                self.proposal_net = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))

    state = Captioner(with_proposals=False).state_dict()
    model = Captioner(with_proposals=True)
    try:
        model.load_state_dict(state)
    except RuntimeError as exc:
        log = f"2021-07-11T09:31:47 ERROR: {exc}\n"  # logged by the trainer, without its traceback
    diagnosis = diagnose_text(log, correlate=False)
    assert diagnosis.kind == "checkpoint-mismatch"
    assert 'Every missing key is under "proposal_net."' in diagnosis.root_cause
    titles = [f.title for f in diagnosis.fixes]
    assert titles[0] == "Build the model the checkpoint was saved from"
    assert not any(t.startswith("Load only what fits") for t in titles)
    second = diagnosis.fixes[1]
    scope = {"state": state, "model": model}
    exec(second.detail, scope)  # loads the encoder; the assert holds: only proposal_net is missing
    assert torch.equal(model.encoder.weight, state["encoder.weight"])


# --- weights_only: the class from the message is allow-listed ----------------------------------------

def test_add_safe_globals_names_the_class_and_the_load_then_works(tmp_path: Path) -> None:
    script = _write(tmp_path, "load.py", """\
        import argparse
        import sys
        import torch

        path = sys.argv[1]
        torch.save({"args": argparse.Namespace(lr=0.1), "w": torch.ones(2)}, path)
        torch.load(path)
        """)
    checkpoint = tmp_path / "ckpt.pt"
    log = run_failing([sys.executable, str(script), str(checkpoint)], tmp_path)
    diagnosis = diagnose_text(log, correlate=False, base_dir=tmp_path)
    assert diagnosis.kind == "weights-only-load"
    first = diagnosis.fixes[0]
    assert "add_safe_globals([argparse.Namespace])" in first.detail
    scope: dict = {"torch": torch, "path": str(checkpoint)}
    try:
        exec(first.detail, scope)
        assert scope["state"]["args"].lr == 0.1
    finally:
        torch.serialization.clear_safe_globals()
