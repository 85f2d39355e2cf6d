"""TRN401 on the square root of a squared distance expanded as |x|^2 + |y|^2 - 2 x.y (a metric-learning
or triplet loss's distance matrix). Where two points coincide, every diagonal entry of a set against itself,
the expansion cancels: rounding leaves it exactly 0 or slightly negative, so the root is NaN forward or its
gradient inf, and backward NaN. `clamp(min=0)` does not help (clamp passes the gradient at an input of
exactly 0), nor does a tiny `+ eps` (the negatives stay negative); `clamp_min(tiny)` and `relu` do. Each
claim is checked on torch here; the value model read the expansion as a plain difference before, and the
rule was quiet on every program below."""

from __future__ import annotations

import subprocess
import sys

import torch

from traindoctor.config import Config
from traindoctor.lint import fix_source, lint_source

CONFIG = Config(select=("strict",))


def _lines(source: str) -> list[int]:
    return [f.range.start.line + 1 for f in lint_source(source, "t.py", CONFIG).findings if f.code == "TRN401"]


PROGRAM = '''import torch


def distance_loss(x):
    sq = (x * x).sum(1, keepdim=True)
    d2 = sq + sq.t() - 2 * x @ x.t()
    dist = d2.sqrt()
    return dist.mean()
'''
ROOT = "dist = d2.sqrt()"


def _grad(source: str, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    namespace: dict = {}
    exec(compile(source, "t.py", "exec"), namespace)
    x = x.clone().requires_grad_(True)
    loss = namespace["distance_loss"](x)
    loss.backward()
    return loss.detach(), x.grad


def _points() -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randn(64, 128)


def test_root_of_an_expanded_distance_is_reported_and_nan_on_torch(tmp_path):
    assert _lines(PROGRAM) == [7]
    loss, grad = _grad(PROGRAM, _points())
    assert torch.isnan(loss) and torch.isnan(grad).any()
    fixed = fix_source(PROGRAM, "t.py", CONFIG, unsafe=True)[0]
    assert "d2.clamp_min(torch.finfo(d2.dtype).tiny).sqrt()" in fixed and _lines(fixed) == []
    path = tmp_path / "fixed.py"
    path.write_text(fixed)
    proc = subprocess.run([sys.executable, "-m", "pyflakes", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    fixed_loss, fixed_grad = _grad(fixed, _points())
    assert torch.isfinite(fixed_loss) and torch.isfinite(fixed_grad).all()
    # off the diagonal the clamp changes nothing
    far = torch.eye(4) * 10
    assert torch.allclose(_grad(PROGRAM, far)[0], _grad(fixed, far)[0])


def test_every_written_form_of_the_expansion():
    cross = "    d2 = sq + sq.t() - 2 * x @ x.t()\n"
    forms = (
        "    d2 = sq - 2 * torch.matmul(x, x.t()) + sq.t()\n",
        "    inner = torch.mm(x, x.t())\n    d2 = sq + sq.t() - 2 * inner\n",
        "    d2 = sq + sq.t() + -2 * x.matmul(x.t())\n",
        "    d2 = torch.addmm(sq + sq.t(), x, x.t(), beta=1, alpha=-2)\n",
        "    d2 = (sq + sq.t()).addmm(x, x.t(), alpha=-2)\n",
    )
    for form in forms:
        source = PROGRAM.replace(cross, form)
        assert _lines(source) == [source.splitlines().index("    " + ROOT) + 1], form
        loss, grad = _grad(source, _points())
        assert torch.isnan(loss) or torch.isnan(grad).any(), form
    # as a power, and through clamp(min=0), whose backward passes the gradient at exactly 0
    assert _lines(PROGRAM.replace(ROOT, "dist = d2 ** 0.5")) == [7]
    clamped = PROGRAM.replace(ROOT, "dist = d2.clamp(min=0).sqrt()")
    assert _lines(clamped) == [7]
    loss, grad = _grad(clamped, _points())
    assert torch.isfinite(loss) and torch.isnan(grad).any()
    assert _lines(PROGRAM.replace(ROOT, "dist = torch.sqrt(torch.clamp(d2, min=0))")) == [7]


def test_quiet_twins():
    # a positive floor, or relu (its backward passes nothing at 0): finite on torch, and quiet
    for guard in ("dist = d2.clamp(min=1e-12).sqrt()", "dist = torch.relu(d2).sqrt()",
                  "dist = torch.sqrt(torch.clamp(d2, min=1e-12))"):
        source = PROGRAM.replace(ROOT, guard)
        assert _lines(source) == [], guard
        loss, grad = _grad(source, _points())
        assert torch.isfinite(loss) and torch.isfinite(grad).all(), guard
    # a kernel of the squared distance takes no root
    assert _lines(PROGRAM.replace(ROOT, "dist = torch.exp(-d2)")) == []
    # a plain difference of two products is no expansion
    assert _lines(PROGRAM.replace("2 * x @ x.t()", "3 * x @ x.t()")) == []
    assert _lines(PROGRAM.replace("sq + sq.t() - 2 * x @ x.t()", "sq - 2 * x")) == []
    # torch.cdist handles a zero distance itself: finite gradient on torch, nothing to report
    cdist = PROGRAM.replace(ROOT, "dist = torch.cdist(x, x)")
    assert _lines(cdist) == []
    assert torch.isfinite(_grad(cdist, _points())[1]).all()
