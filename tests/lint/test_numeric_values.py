"""Values that are really exactly 0 (or saturate) in float32, followed across functions, modules and
files (issue 27, third pass on TRN401/TRN402). Each mechanism has a small real program the rules
missed before, quiet twins with the guard forms, and its float32/backward claim checked against torch."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from project_helpers import places_found_by_check
from traindoctor.config import Config
from traindoctor.lint import fix_source, lint_source

CONFIG = Config(select=("strict",))


def _found(source: str, code: str) -> list:
    return [f for f in lint_source(source, "t.py", CONFIG).findings if f.code == code]


def _lines(source: str, code: str) -> list[int]:
    return sorted(f.range.start.line + 1 for f in _found(source, code))


def _run(source: str) -> dict:
    namespace: dict = {"__name__": "t"}
    exec(compile(source, "t.py", "exec"), namespace)
    return namespace


# -- the float32 facts ------------------------------------------------------------------------------

def test_sigmoid_and_softmax_saturate_in_float32():
    """log(sigmoid) is -inf below about -88.7 and log(1 - sigmoid) from about 16.7 on; softmax gives an
    exact 0 to a logit 104 below the largest: the log is -inf there and the gradient NaN."""
    z = torch.tensor([-120.0, 0.0, 30.0], requires_grad=True)
    p = torch.sigmoid(z)
    assert p[0].item() == 0.0 and p[2].item() == 1.0
    (torch.log(p) + torch.log(1 - p)).sum().backward()
    assert torch.isnan(z.grad[0]) and torch.isnan(z.grad[2]) and torch.isfinite(z.grad[1])
    x = torch.tensor([[0.0, -104.0]], requires_grad=True)
    q = torch.softmax(x, dim=1)
    assert q[0, 1].item() == 0.0
    torch.log(q).sum().backward()
    assert torch.isnan(x.grad).any()


def test_a_softmax_or_sigmoid_written_by_hand_saturates_like_the_library():
    x = torch.tensor([[0.0, -104.0]], requires_grad=True)
    e = torch.exp(x)
    p = e / e.sum(dim=1, keepdim=True)
    assert p[0, 1].item() == 0.0
    torch.log(p).sum().backward()
    assert torch.isnan(x.grad).any()
    z = torch.tensor([-120.0], requires_grad=True)
    s = 1 / (1 + torch.exp(-z))
    assert s.item() == 0.0
    torch.log(s).sum().backward()
    assert torch.isnan(z.grad).all() or torch.isinf(z.grad).all()


def test_tanh_saturates_in_float32():
    """1 - tanh(x)**2 is exactly 0 from |x| of about 9.1 on (rules/vocab/values.yaml), so the log-det of a
    tanh-squashed policy is -inf and its gradient NaN; + eps keeps both finite."""
    assert torch.tanh(torch.tensor(9.1)).item() == 1.0 and torch.tanh(torch.tensor(8.5)).item() < 1.0
    x = torch.tensor([10.0, 0.5], requires_grad=True)
    torch.log(1 - torch.tanh(x).pow(2)).sum().backward()
    assert torch.isnan(x.grad[0]) and torch.isfinite(x.grad[1])
    x = torch.tensor([10.0, 0.5], requires_grad=True)
    torch.log(1 - torch.tanh(x).pow(2) + 1e-6).sum().backward()
    assert torch.isfinite(x.grad).all()


def test_nan_to_num_around_a_log_is_not_a_guard():
    """nan_to_num makes the forward value finite, but its backward zeroes the gradient where the value was
    not finite, and log's backward turns that 0 into 0/0: the gradient is NaN anyway. So it does not keep
    TRN402 quiet."""
    z = torch.tensor([30.0], requires_grad=True)
    torch.nan_to_num(torch.log(1 - torch.sigmoid(z))).sum().backward()
    assert torch.isnan(z.grad).all()
    x = torch.tensor([1.0, 2.0], requires_grad=True)  # the same for a division by an exact 0
    torch.nan_to_num(x / torch.tensor([0.0, 1.0])).sum().backward()
    assert torch.isnan(x.grad[0])
    source = ("import torch\n\n\ndef loss(z):\n"
              "    return torch.nan_to_num(torch.log(1 - torch.sigmoid(z))).mean()\n")
    assert _lines(source, "TRN402") == [5]


# -- a probability bound to a name: log(1 - p) --------------------------------------------------------

BOUND = '''import torch


def bce(z, y):
    p = torch.sigmoid(z)
    return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()
'''


def test_log_of_one_minus_a_bound_sigmoid():
    assert _lines(BOUND, "TRN402") == [6, 6]
    assert not _found(BOUND, "TRN401")


@pytest.mark.parametrize("change", [
    ("torch.log(p)", "torch.log(p + 1e-7)", "torch.log(1 - p)", "torch.log(1 - p + 1e-7)"),
    ("torch.log(p)", "torch.log(p.clamp(min=1e-7))", "torch.log(1 - p)", "torch.log((1 - p).clamp(min=1e-7))"),
    ("p = torch.sigmoid(z)", "p = torch.sigmoid(z).clamp(1e-6, 1 - 1e-6)", "", ""),
    ("p = torch.sigmoid(z)", "p = torch.clamp(torch.sigmoid(z), min=1e-4, max=1 - 1e-4)", "", ""),
    ("torch.log(p)", "torch.nn.functional.logsigmoid(z)", "torch.log(1 - p)", "torch.nn.functional.logsigmoid(-z)"),
    ("p = torch.sigmoid(z)", "p = torch.where(z > 0, torch.sigmoid(z), torch.sigmoid(z).clamp_min(1e-6))",
     "torch.log(1 - p)", "torch.log(torch.where(p == 1, torch.full_like(p, 1e-6), 1 - p))"),
    ("p = torch.sigmoid(z)", "p = torch.sigmoid(z).masked_fill(z.abs() > 15, 0.5)", "", ""),
])
def test_log_of_a_guarded_probability_is_quiet(change):
    source = BOUND
    for old, new in zip(change[::2], change[1::2]):
        source = source.replace(old, new) if old else source
    assert source != BOUND
    assert not _found(source, "TRN402") and not _found(source, "TRN401")
    z = torch.tensor([-120.0, 0.0, 30.0], requires_grad=True)
    _run(source)["bce"](z, torch.tensor([1.0, 0.0, 0.0])).backward()
    assert torch.isfinite(z.grad).all()


def test_bce_with_logits_is_quiet():
    source = ("import torch\nimport torch.nn.functional as F\n\n\ndef loss(z, y):\n"
              "    return F.binary_cross_entropy_with_logits(z, y) + F.log_softmax(z, dim=-1).mean()\n")
    assert not _found(source, "TRN402") and not _found(source, "TRN401")


# -- a dict item, a module's forward, a function held by an attribute --------------------------------

FOCAL = '''import torch
import torch.nn as nn


def _neg_loss(pred, gt):
    pos = gt.eq(1).float()
    neg = gt.lt(1).float()
    pos_loss = torch.log(pred) * torch.pow(1 - pred, 2) * pos
    neg_loss = torch.log(1 - pred) * torch.pow(pred, 2) * neg
    return -(pos_loss + neg_loss).sum() / pos.sum().clamp(min=1)


class FocalLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.neg_loss = _neg_loss

    def forward(self, out, target):
        return self.neg_loss(out, target)


class Criterion(nn.Module):
    def __init__(self):
        super().__init__()
        self.focal_loss = FocalLoss()

    def forward(self, outputs, targets):
        outputs["hm"] = torch.sigmoid(outputs["hm"])
        return self.focal_loss(outputs["hm"], targets["hm"])
'''


def test_sigmoid_stored_in_a_dict_reaches_a_loss_through_a_module_and_an_attribute():
    found = _found(FOCAL, "TRN402")
    assert sorted(f.range.start.line + 1 for f in found) == [8, 9]
    assert all("sigmoid" in f.message for f in found)
    assert not _found(FOCAL, "TRN401")
    namespace = _run(FOCAL)  # the claim: a saturated heatmap logit makes the loss's gradient NaN
    hm = torch.tensor([[-120.0, 0.0, 30.0]], requires_grad=True)
    loss = namespace["Criterion"]()({"hm": hm}, {"hm": torch.tensor([[1.0, 0.5, 0.0]])})
    loss.backward()
    assert torch.isnan(hm.grad).any()


@pytest.mark.parametrize("change", [
    ('outputs["hm"] = torch.sigmoid(outputs["hm"])',
     'outputs["hm"] = torch.sigmoid(outputs["hm"]).clamp(1e-4, 1 - 1e-4)'),  # CenterNet's guard
    ('        return self.focal_loss(outputs["hm"], targets["hm"])',
     '        outputs = {"hm": targets["hm"]}\n        return self.focal_loss(outputs["hm"], targets["hm"])'),
    ('return self.focal_loss(outputs["hm"], targets["hm"])',
     'return self.focal_loss(outputs["hm"], targets["hm"]) + self.focal_loss(outputs["raw"], targets["hm"])'),
    ("        return self.neg_loss(out, target)", "        return _neg_loss(out.clamp(1e-4, 1 - 1e-4), target)"),
])
def test_the_probability_must_reach_the_log_on_every_path(change):
    old, new = change
    source = FOCAL.replace(old, new)
    assert source != FOCAL
    assert not _found(source, "TRN402") and not _found(source, "TRN401")


def test_a_module_called_at_module_level_leaves_its_forward_parameters_unknown():
    source = FOCAL + '\n\nCRIT = FocalLoss()\nLOSS = CRIT(torch.randn(2, 3), torch.zeros(2, 3))\n'
    assert not _found(source, "TRN402")


# -- softmax and sigmoid written by hand ------------------------------------------------------------

BY_HAND = '''import torch


def nll(x, y):
    e = torch.exp(x)
    p = e / e.sum(dim=1, keepdim=True)
    return -torch.log(p.gather(1, y)).mean()


def bce(z, y):
    p = 1 / (1 + torch.exp(-z))
    return -(y * torch.log(p)).mean()
'''


def test_a_softmax_and_a_sigmoid_written_by_hand():
    found = _found(BY_HAND, "TRN402")
    assert sorted(f.range.start.line + 1 for f in found) == [7, 12]
    assert all(f.fix is None for f in found)  # `p.gather(1, y)` is not a softmax call to rewrite


@pytest.mark.parametrize("change", [
    ("torch.log(p.gather(1, y))", "torch.log(p.gather(1, y) + 1e-8)"),
    ("e / e.sum(dim=1, keepdim=True)", "e / x.sum(dim=1, keepdim=True)"),  # not a ratio of the exponential
    ("torch.log(p)", "torch.log(p.clamp_min(1e-8))"),
    ("1 / (1 + torch.exp(-z))", "1 / (2 + torch.exp(-z))"),
])
def test_not_a_probability_written_by_hand_or_guarded(change):
    old, new = change
    source = BY_HAND.replace(old, new)
    assert source != BY_HAND
    assert len(_found(source, "TRN402")) == 1  # the other function still reports


def test_the_log_of_an_exponential_alone_is_quiet():
    source = "import torch\n\n\ndef kl(logvar):\n    std = torch.exp(0.5 * logvar)\n    return torch.log(std).sum()\n"
    assert not _found(source, "TRN401") and not _found(source, "TRN402")


# -- tanh-squashed policies -------------------------------------------------------------------------

SQUASHED = '''import torch
from torch.distributions import Normal


def sample(mean, log_std):
    normal = Normal(mean, log_std.exp())
    x_t = normal.rsample()
    y_t = torch.tanh(x_t)
    log_prob = normal.log_prob(x_t)
    log_prob = log_prob - torch.log(1 - y_t.pow(2))
    return y_t, log_prob.sum(1, keepdim=True)
'''


def test_log_of_one_minus_a_squared_tanh():
    found = _found(SQUASHED, "TRN401")
    assert [f.range.start.line + 1 for f in found] == [10]
    assert "tanh" in found[0].message
    fixed = fix_source(SQUASHED, "t.py", CONFIG, unsafe=True)[0]
    assert not _found(fixed, "TRN401")
    torch.manual_seed(0)
    mean = torch.full((1, 2), 30.0, requires_grad=True)  # a saturated action
    _run(fixed)["sample"](mean, torch.zeros(1, 2))[1].sum().backward()
    assert torch.isfinite(mean.grad).all()
    mean = torch.full((1, 2), 30.0, requires_grad=True)
    _run(SQUASHED)["sample"](mean, torch.zeros(1, 2))[1].sum().backward()
    assert not torch.isfinite(mean.grad).all()  # the claim, before the fix


@pytest.mark.parametrize("change", [
    ("torch.log(1 - y_t.pow(2))", "torch.log(1 - y_t.pow(2) + 1e-6)"),
    ("torch.log(1 - y_t.pow(2))", "torch.log((1 - y_t.pow(2)).clamp(min=1e-6))"),
    ("y_t = torch.tanh(x_t)", "y_t = torch.sigmoid(x_t)"),  # not a tanh: 1 - p**2 of a sigmoid is 0 only at p = 1
    ("torch.log(1 - y_t.pow(2))", "2 * (torch.log(torch.tensor(2.0)) - x_t - torch.nn.functional.softplus(-2 * x_t))"),
])
def test_guarded_or_stable_log_det_is_quiet(change):
    old, new = change
    source = SQUASHED.replace(old, new)
    assert source != SQUASHED
    assert not _found(source, "TRN401")


# -- the held-out false-finding classes stay quiet ------------------------------------------------------

def test_sqrt_of_relu_differences_has_gradient_zero_and_is_quiet():
    z = torch.tensor([0.0, 1.0, -1.0], requires_grad=True)
    (torch.sqrt(F.relu(z)) - torch.sqrt(F.relu(-z))).sum().backward()
    assert z.grad[0].item() == 0.0
    source = ('import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n'
              'class Signed(nn.Module):\n    def forward(self, z):\n'
              '        return torch.sqrt(F.relu(z)) - torch.sqrt(F.relu(-z))\n\n\n'
              'class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n'
              '        self.lin = nn.Linear(4, 4)\n        self.signed = Signed()\n\n'
              '    def forward(self, x):\n        return self.signed(F.relu(self.lin(x)))\n')
    assert not _found(source, "TRN401")


@pytest.mark.parametrize("denominator", ["n.clamp(min=1)", "max(n, 1)", "torch.where(n == 0, torch.ones_like(n), n)",
                                         "n + 1e-8", "n.clamp_min(1)"])
def test_a_count_replaced_where_it_is_zero_is_quiet(denominator):
    source = ("import torch\n\n\ndef masked_mean(x, mask):\n    n = mask.sum(1)\n    if (n == 0).any():\n"
              "        print('empty row')\n"
              f"    return (x * mask).sum(1) / {denominator}\n")
    assert not _found(source, "TRN406") and not _found(source, "TRN401")


def test_the_norm_of_a_learned_projection_is_quiet():
    source = ('import torch\nimport torch.nn as nn\n\n\nclass Head(nn.Module):\n    def __init__(self):\n'
              '        super().__init__()\n        self.proj = nn.Linear(8, 4)\n\n    def forward(self, x):\n'
              '        z = self.proj(x)\n        return z / z.norm(dim=-1, keepdim=True)\n\n\n'
              'class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n'
              '        self.head = Head()\n\n    def forward(self, x):\n        return self.head(x)\n')
    assert not _found(source, "TRN406") and not _found(source, "TRN401")


# -- across files: a discriminator ending in nn.Sigmoid, trained in another file -----------------------

MODELS = '''import torch.nn as nn


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1), nn.Sigmoid())

    def forward(self, x):
        return self.net(x)
'''

TRAIN = '''import torch
from models import Discriminator


def main():
    D = Discriminator()
    opt = torch.optim.Adam(D.parameters())
    for _ in range(2):
        real, fake = torch.randn(8, 4), torch.randn(8, 4)
        d_real = D(real)
        loss = -(torch.log(d_real) + torch.log(1 - D(fake))).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
'''


def test_a_discriminator_of_another_file_ending_in_sigmoid(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'gan'\n")
    (tmp_path / "models.py").write_text(MODELS)
    (tmp_path / "train.py").write_text(TRAIN)
    found = [f for f in places_found_by_check(tmp_path, "strict") if f[0] in ("TRN401", "TRN402")]
    assert found == [("TRN402", "train.py", 11), ("TRN402", "train.py", 11)]
    (tmp_path / "models.py").write_text(MODELS.replace(", nn.Sigmoid())", ")"))  # raw scores: a different bug
    assert not [f for f in places_found_by_check(tmp_path, "strict") if f[0] in ("TRN401", "TRN402")]


# -- a forward that returns a tuple: each item keeps its facts, in the file and across files ------------

VAE_MODEL = '''import torch
import torch.nn as nn


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(8, 4)
        self.dec = nn.Linear(2, 8)

    def decode(self, z):
        return torch.sigmoid(self.dec(z))

    def forward(self, x):
        h = self.enc(x)
        mu, logvar = h[:, :2], h[:, 2:]
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.decode(z), mu, logvar
'''

VAE_TRAIN = '''

def train(data):
    model = VAE()
    opt = torch.optim.Adam(model.parameters())
    for x in data:
        recon, mu, logvar = model(x)
        rec = -(x * torch.log(recon) + (1 - x) * torch.log(1 - recon)).sum()
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        opt.zero_grad()
        (rec + kl).backward()
        opt.step()
'''


def test_the_items_of_a_forward_returning_a_tuple():
    source = VAE_MODEL + VAE_TRAIN
    line = source.splitlines().index("        rec = -(x * torch.log(recon) + (1 - x) * torch.log(1 - recon)).sum()") + 1
    assert _lines(source, "TRN402") == [line, line]
    assert not _found(source, "TRN405")  # the KL's logvar.exp() is not called raw scores through the tuple
    guarded = source.replace("torch.log(recon)", "torch.log(recon + 1e-8)").replace("torch.log(1 - recon)",
                                                                                     "torch.log(1 - recon + 1e-8)")
    assert not _found(guarded, "TRN402")
    swapped = source.replace("recon, mu, logvar = model(x)", "mu, recon, logvar = model(x)")
    assert not _found(swapped, "TRN402")  # the item at that position is not the sigmoid


def test_the_items_of_a_forward_of_another_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'vae'\n")
    (tmp_path / "models.py").write_text(VAE_MODEL)
    (tmp_path / "train.py").write_text("import torch\nfrom models import VAE\n" + VAE_TRAIN)
    assert [f for f in places_found_by_check(tmp_path, "strict") if f[0] in ("TRN401", "TRN402", "TRN405")] == \
        [("TRN402", "train.py", 10), ("TRN402", "train.py", 10)]


# -- clamp(min=0) is a ReLU: an intersection's area is exactly 0 for disjoint boxes -----------------------

IOU = '''import torch


def iou_loss(pred, target):
    lt = torch.max(pred[:, :2], target[:, :2])
    rb = torch.min(pred[:, 2:], target[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, 0] * wh[:, 1]
    area_p = (pred[:, 2] - pred[:, 0]) * (pred[:, 3] - pred[:, 1])
    area_t = (target[:, 2] - target[:, 0]) * (target[:, 3] - target[:, 1])
    iou = inter / (area_p + area_t - inter)
    return -torch.log(iou).mean()
'''


def test_log_of_an_iou_whose_intersection_is_clamped_at_zero():
    assert _lines(IOU, "TRN401") == [12]
    pred = torch.tensor([[0.0, 0.0, 1.0, 1.0]], requires_grad=True)
    loss = _run(IOU)["iou_loss"](pred, torch.tensor([[2.0, 2.0, 3.0, 3.0]]))  # disjoint boxes
    assert torch.isinf(loss)
    loss.backward()
    assert torch.isnan(pred.grad).any()
    fixed = fix_source(IOU, "t.py", CONFIG, unsafe=True)[0]
    assert not _found(fixed, "TRN401")
    pred = torch.tensor([[0.0, 0.0, 1.0, 1.0]], requires_grad=True)
    _run(fixed)["iou_loss"](pred, torch.tensor([[2.0, 2.0, 3.0, 3.0]])).backward()
    assert torch.isfinite(pred.grad).all()


@pytest.mark.parametrize("change", [
    ("-torch.log(iou)", "-torch.log(iou + 1e-6)"),
    ("-torch.log(iou)", "-torch.log(iou.clamp(min=1e-6))"),
    ("-torch.log(iou)", "(1 - iou)"),
    ("(rb - lt).clamp(min=0)", "(rb - lt).clamp(min=1e-6)"),
])
def test_a_guarded_iou_log_is_quiet(change):
    old, new = change
    source = IOU.replace(old, new)
    assert source != IOU
    assert not _found(source, "TRN401")


def test_sqrt_of_a_clamp_at_zero_has_gradient_zero_where_clamped_and_is_quiet():
    x = torch.tensor([-1.0, 4.0], requires_grad=True)
    torch.sqrt(torch.clamp(x, min=0)).sum().backward()
    assert x.grad[0].item() == 0.0 and torch.isfinite(x.grad).all()
    source = ("import torch\n\n\ndef f(x):\n"
              "    return torch.sqrt(torch.clamp(x, min=0)).sum() + x.clamp(0).sqrt().sum()\n")
    assert not _found(source, "TRN401")


ACTOR = '''import torch
import torch.nn as nn


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.mu = nn.Sequential(nn.Linear(4, 2), nn.Tanh())

    def forward(self, x):
        return self.mu(x)


def log_det(actor, x):
    a = Actor()(x)
    return torch.log(1 - a.pow(2)).sum()
'''


def test_a_module_ending_in_tanh_saturates():
    assert torch.nn.Tanh()(torch.tensor([9.5])).item() == 1.0
    assert _lines(ACTOR, "TRN401") == [16]
    assert "9.1" in _found(ACTOR, "TRN401")[0].message
    assert not _found(ACTOR.replace("nn.Tanh()", "nn.Sigmoid()"), "TRN401")
    assert not _found(ACTOR.replace("1 - a.pow(2)", "1 - a.pow(2) + 1e-6"), "TRN401")
