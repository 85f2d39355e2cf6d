"""Run `traindoctor budget` on a script and read its JSON report; exact accounting of a real CPU step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).parent / "scripts"
PYTHON = sys.executable
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))


def env() -> dict[str, str]:
    environment = dict(os.environ)
    environment["OMP_NUM_THREADS"] = "1"  # two cores shared by many processes
    environment.pop("TRAINDOCTOR_MONITOR", None)
    return environment


def budget(*args: str, cwd: Path, timeout: float = 240) -> tuple[int, dict[str, Any] | None, str]:
    """(exit code, the JSON report or None, stderr) of `traindoctor budget --format json ARGS`."""
    command = [PYTHON, "-m", "traindoctor", "budget", "--format", "json", "--runs-dir", str(cwd / "runs"), *args]
    done = subprocess.run(command, cwd=cwd, env=env(), capture_output=True, text=True, timeout=timeout)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return done.returncode, (json.loads(lines[-1]) if lines else None), done.stderr


def exact_step(name: str, size: int) -> dict[str, int]:
    """Exact accounting of the second real CPU training step of train_model.py's `name` at batch `size`:
    parameter, gradient and optimizer-state bytes from the real tensors, and the activations alive when
    backward starts: every storage autograd saved (torch.autograd.graph.saved_tensors_hooks) plus the
    step's batch, output and loss, without parameters and buffers."""
    import torch

    import train_model

    torch.manual_seed(0)
    model = train_model.build(name)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    inputs, targets = train_model.batch(name, size)
    owned = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    result: dict[str, int] = {}
    for _ in range(2):
        x, y = inputs.clone(), targets.clone()
        saved: dict[int, int] = {}

        def pack(tensor: torch.Tensor) -> torch.Tensor:
            storage = tensor.untyped_storage()
            saved.setdefault(storage.data_ptr(), storage.nbytes())
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            out = model(x)
            loss = train_model.loss_of(name, out, y)
        for tensor in (x, y, out, loss):
            storage = tensor.untyped_storage()
            saved.setdefault(storage.data_ptr(), storage.nbytes())
        activations = sum(n for ptr, n in saved.items() if ptr not in owned)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        gradients = sum(p.grad.nbytes for p in model.parameters() if p.grad is not None)
        optimizer.step()
        result = {
            "parameters": sum(p.nbytes for p in model.parameters()),
            "buffers": sum(b.nbytes for b in model.buffers()),
            "gradients": gradients,
            "optimizer_state": sum(v.nbytes for s in optimizer.state.values() for v in s.values()
                                   if isinstance(v, torch.Tensor)),
            "activations": activations,
        }
    return result
