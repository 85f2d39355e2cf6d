"""TRN401 on the square root of a value whose two terms cancel. First, a squared distance expanded as
|x|^2 + |y|^2 - 2 x.y (a metric-learning
or triplet loss's distance matrix). Where two points coincide, every diagonal entry of a set against itself,
the expansion cancels: rounding leaves it exactly 0 or slightly negative, so the root is NaN forward or its
gradient inf, and backward NaN. `clamp(min=0)` does not help (clamp passes the gradient at an input of
exactly 0), nor does a tiny `+ eps` (the negatives stay negative); `clamp_min(tiny)` and `relu` do. Each
claim is checked on torch here; the value model read the expansion as a plain difference before, and the
rule was quiet on every program below. Second, a variance computed as mean(x**2) - mean(x)**2: exactly 0 or
negative by cancellation for a constant input, or where the mean is large next to the spread (torch.var is
computed stably)."""

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


VARIANCE = '''import torch


def whitened_loss(x):
    var = (x ** 2).mean(-1) - x.mean(-1) ** 2
    std = var.sqrt()
    return std.mean()
'''
STD = "std = var.sqrt()"


def _variance_grad(source: str, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    namespace: dict = {}
    exec(compile(source, "t.py", "exec"), namespace)
    x = x.clone().requires_grad_(True)
    loss = namespace["whitened_loss"](x)
    loss.backward()
    return loss.detach(), x.grad


def _offset_rows() -> torch.Tensor:
    torch.manual_seed(0)
    return 100 + 0.001 * torch.randn(16, 256)  # a mean large next to the spread


def test_root_of_a_shortcut_variance_is_reported_and_nan_on_torch(tmp_path):
    assert _lines(VARIANCE) == [6]
    loss, grad = _variance_grad(VARIANCE, _offset_rows())
    assert torch.isnan(loss) and torch.isnan(grad).any()
    # a constant row (an all-zero padded frame) is exactly 0: finite forward, NaN gradient
    loss, grad = _variance_grad(VARIANCE, torch.zeros(4, 8))
    assert torch.isfinite(loss) and torch.isnan(grad).all()
    # torch.var of the same rows is computed stably
    assert torch.isfinite(_offset_rows().var(-1, unbiased=False).sqrt()).all()
    fixed = fix_source(VARIANCE, "t.py", CONFIG, unsafe=True)[0]
    assert "var.clamp_min(torch.finfo(var.dtype).tiny).sqrt()" in fixed and _lines(fixed) == []
    path = tmp_path / "fixed.py"
    path.write_text(fixed)
    proc = subprocess.run([sys.executable, "-m", "pyflakes", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    for rows in (_offset_rows(), torch.zeros(4, 8)):
        loss, grad = _variance_grad(fixed, rows)
        assert torch.isfinite(loss) and torch.isfinite(grad).all()
    torch.manual_seed(0)
    spread = torch.randn(4, 8)
    assert torch.allclose(_variance_grad(VARIANCE, spread)[0], _variance_grad(fixed, spread)[0])


def test_every_written_form_of_the_shortcut_variance():
    forms = (
        "    mu = x.mean(-1)\n    var = x.pow(2).mean(-1) - mu * mu\n",
        "    ex2 = torch.mean(x * x, -1)\n    var = ex2 - torch.mean(x, -1) ** 2\n",
        "    var = torch.square(x).mean(-1) - x.mean(-1).pow(2)\n",
    )
    head = "    var = (x ** 2).mean(-1) - x.mean(-1) ** 2\n"
    for form in forms:
        source = VARIANCE.replace(head, form)
        assert _lines(source) == [source.splitlines().index("    " + STD) + 1], form
        loss, grad = _variance_grad(source, _offset_rows())
        assert torch.isnan(loss) and torch.isnan(grad).any(), form
    clamped = VARIANCE.replace(STD, "std = var.clamp(min=0).sqrt()")
    assert _lines(clamped) == [6]
    loss, grad = _variance_grad(clamped, torch.zeros(4, 8))
    assert torch.isfinite(loss) and torch.isnan(grad).all()


def test_variance_quiet_twins():
    for guard in ("std = var.clamp(min=1e-12).sqrt()", "std = torch.relu(var).sqrt()"):
        source = VARIANCE.replace(STD, guard)
        assert _lines(source) == [], guard
        for rows in (_offset_rows(), torch.zeros(4, 8)):
            loss, grad = _variance_grad(source, rows)
            assert torch.isfinite(loss) and torch.isfinite(grad).all(), guard
    # an epsilon covers the constant rows and is read as a guard (LayerNorm written out); a mean this large
    # next to the spread still cancels below -eps, which the rule leaves alone
    eps = VARIANCE.replace(STD, "std = (var + 1e-5).sqrt()")
    assert _lines(eps) == []
    loss, grad = _variance_grad(eps, torch.zeros(4, 8))
    assert torch.isfinite(loss) and torch.isfinite(grad).all()
    assert torch.isnan(_variance_grad(eps, _offset_rows())[0])
    # not the same reduction, not the same tensor: no cancellation to speak of
    assert _lines(VARIANCE.replace("x.mean(-1) ** 2", "x.mean() ** 2")) == []
    assert _lines(VARIANCE.replace("def whitened_loss(x):", "def whitened_loss(x, y=None):")
                  .replace("x.mean(-1) ** 2", "y.mean(-1) ** 2")) == []
    # the library's variance is no cancellation (its root is the older spread finding, exactly 0 for a constant row)
    library = VARIANCE.replace("(x ** 2).mean(-1) - x.mean(-1) ** 2", "x.var(-1, unbiased=False)")
    messages = [f.message for f in lint_source(library, "t.py", CONFIG).findings if f.code == "TRN401"]
    assert not any("mean(x**2) - mean(x)**2" in m for m in messages)


def test_the_shortcut_variance_is_read_through_the_files_own_torch_alias():
    """`torch.mean`/`torch.square` are known by what the import binds, not by the spellings `torch`/`th`."""
    aliased = VARIANCE.replace("import torch", "import torch as T") \
        .replace("(x ** 2).mean(-1) - x.mean(-1) ** 2", "T.mean(T.square(x), -1) - T.mean(x, -1) ** 2")
    assert _lines(aliased) == [6]
    loss, grad = _variance_grad(aliased, _offset_rows())
    assert torch.isnan(loss) and torch.isnan(grad).any()
    # `th` bound to something else is not torch: `th.mean(x)` is no mean of x's rows that the rule knows
    other = VARIANCE.replace("import torch", "import torch\nimport numpy as th") \
        .replace("(x ** 2).mean(-1) - x.mean(-1) ** 2", "th.mean(x ** 2, -1) - th.mean(x, -1) ** 2")
    assert _lines(other) == []
