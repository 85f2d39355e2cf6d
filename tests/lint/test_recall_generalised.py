"""Recall mechanisms of issue 27 built by the kind of fact a rule lacked (bench/bugs dev half), not
by case: each test is a small real program of that shape the rule missed before, and quiet twins."""

from __future__ import annotations

import pytest
import torch

from project_helpers import places_found_by_check
from traindoctor.config import Config
from traindoctor.lint import fix_source, lint_source

CONFIG = Config(select=("strict",))


def _found(source: str, code: str) -> list:
    return [f for f in lint_source(source, "t.py", CONFIG).findings if f.code == code]


def _lines(source: str, code: str) -> list[int]:
    return [f.range.start.line + 1 for f in _found(source, code)]


# -- TRN102: a method of the evaluated model other than forward runs the model (decode, predict...)

TAGGER = '''import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        return self.lin(x)

    def decode(self, x):
        return self.lin(x).softmax(-1)


def evaluate(model, batches):
    model.eval()
    out = []
    for x in batches:
        out.append(model.decode(x))
    return out


if __name__ == "__main__":
    print(len(evaluate(Tagger(), [torch.randn(2, 4) for _ in range(3)])))
'''


def test_method_of_an_evaluated_model_runs_it():
    assert _lines(TAGGER, "TRN102") == [21]
    fixed = fix_source(TAGGER, "t.py", CONFIG)[0]
    assert "@torch.no_grad()\ndef evaluate" in fixed and not _found(fixed, "TRN102")
    namespace: dict = {"__name__": "t"}
    exec(compile(fixed, "t.py", "exec"), namespace)  # the fixed code runs, and records no graph
    model = namespace["Tagger"]()
    assert all(not y.requires_grad for y in namespace["evaluate"](model, [torch.randn(2, 4)]))
    before: dict = {"__name__": "t"}
    exec(compile(TAGGER, "t.py", "exec"), before)  # the claim: decode after eval() records a graph
    assert all(y.requires_grad for y in before["evaluate"](before["Tagger"](), [torch.randn(2, 4)]))


@pytest.mark.parametrize("change", [
    ("    for x in batches:\n        out.append(model.decode(x))",
     "    with torch.no_grad():\n        for x in batches:\n            out.append(model.decode(x))"),
    ("    for x in batches:\n        out.append(model.decode(x))",
     "    for x in batches:\n        with torch.inference_mode():\n            out.append(model.decode(x))"),
    ("out.append(model.decode(x))", "out.append(model.generate(x))"),  # HF generate is under no_grad
    ("out.append(model.decode(x))", "model.load_state_dict(x)"),  # state, not computation
    ("out.append(model.decode(x))", "model.decode(x)"),  # result dropped: a state change, not a forward
    ("        out.append(model.decode(x))",
     "        with torch.no_grad():\n            y = model(x)\n        out.append(model.decode(y))"),  # the loop
    # turns autograd off where its author wants it: what runs outside is post-processing
    ("out.append(model.decode(x))", "out.append(model.decode())"),  # no input
    ("    def decode(self, x):", "    @torch.no_grad()\n    def decode(self, x):"),
    ("    model.eval()\n", ""),  # not put in eval mode: nothing says it is evaluated
    ("        out.append(model.decode(x))",
     "        loss = model.decode(x).sum()\n        loss.backward()"),  # it trains
])
def test_method_of_an_evaluated_model_quiet(change):
    old, new = change
    assert old in TAGGER
    assert not _found(TAGGER.replace(old, new), "TRN102")


# -- values: a parameter's zero fact from its callers; softplus outputs underflow to exactly 0

STD_HEADS = '''import torch
from torch import nn


class VRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 8)
        self.enc_std = nn.Sequential(nn.Linear(8, 2), nn.Softplus())
        self.prior_std = nn.Sequential(nn.Linear(8, 2), nn.Softplus())

    def forward(self, x):
        h = self.enc(x)
        return self._kld_gauss(self.enc_std(h), self.prior_std(h))

    def _kld_gauss(self, std_1, std_2):
        return (2 * torch.log(std_2) - 2 * torch.log(std_1) + std_1 ** 2 / std_2 ** 2 - 1).sum()
'''


def test_softplus_underflows_to_zero_in_float32():
    """The claim behind the `underflow` fact, checked against torch: softplus is exactly 0 below about
    -104 in float32, its log is -inf, and the gradients of log and sqrt there are NaN."""
    for make in (lambda x: torch.log(torch.nn.functional.softplus(x)),
                 lambda x: torch.sqrt(torch.nn.functional.softplus(x))):
        x = torch.tensor(-120.0, requires_grad=True)
        make(x).backward()
        assert torch.isnan(x.grad)
    assert torch.nn.functional.softplus(torch.tensor(-104.0)).item() == 0.0
    assert torch.nn.Softplus()(torch.tensor([-104.0])).item() == 0.0


def test_log_of_a_parameter_every_caller_fills_with_a_softplus_output():
    assert _lines(STD_HEADS, "TRN401") == [17, 17]
    fixed = fix_source(STD_HEADS, "t.py", CONFIG, unsafe=True)[0]
    assert not _found(fixed, "TRN401")
    namespace: dict = {}
    exec(compile(fixed, "t.py", "exec"), namespace)
    model = namespace["VRNN"]()
    std = torch.tensor([[0.0, 1.0]], requires_grad=True)  # an underflowed softplus output
    loss = model._kld_gauss(torch.ones(1, 2), std + 1.0) + model._kld_gauss(std + 1.0, torch.ones(1, 2))
    loss.backward()
    assert torch.isfinite(std.grad).all()


@pytest.mark.parametrize("change", [
    ("nn.Sequential(nn.Linear(8, 2), nn.Softplus())\n        self.prior_std",
     "nn.Sequential(nn.Linear(8, 2), nn.Sigmoid())\n        self.prior_std"),  # std_1 is a sigmoid (TRN402's)
    ("self._kld_gauss(self.enc_std(h), self.prior_std(h))",
     "self._kld_gauss(self.enc_std(h) + 1e-6, self.prior_std(h) + 1e-6)"),  # guarded by every caller
    ("self._kld_gauss(self.enc_std(h), self.prior_std(h))",
     "self._kld_gauss(self.enc_std(h).exp(), self.prior_std(h).exp())"),
])
def test_parameter_zero_fact_needs_every_caller(change):
    old, new = change
    source = STD_HEADS.replace(old, new)
    assert source != STD_HEADS
    lines = _lines(source, "TRN401")
    assert lines == ([17] if "Sigmoid" in new else [])


def test_parameter_with_an_unknown_caller_argument_is_quiet():
    source = STD_HEADS.replace("        return self._kld_gauss(self.enc_std(h), self.prior_std(h))",
                               "        a = self._kld_gauss(self.enc_std(h), self.prior_std(h))\n"
                               "        return a + self._kld_gauss(h, h)")
    assert not _found(source, "TRN401")


def test_sqrt_of_a_relu_module_output_stays_quiet():
    """ReLU's backward selects: sqrt(relu(z)) has gradient 0 where z < 0 (checked here), so an
    nn.ReLU module's output is `selected`, like F.relu's, and its sqrt is not reported."""
    source = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        return torch.sqrt(self.act(self.lin(x))).sum()

    def log_rate(self, x):
        return torch.log(self.act(self.lin(x))).sum()
'''
    assert _lines(source, "TRN401") == [15]
    z = torch.tensor([-1.0, 0.0], requires_grad=True)
    torch.sqrt(torch.nn.ReLU()(z)).sum().backward()
    assert z.grad.tolist() == [0.0, 0.0]


# -- TRN102: an evaluation no mode switch marks: a loop runs a model another function trains

TRAINED_ELSEWHERE = '''import torch
from torch import nn

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(3, 4), torch.randn(3, 2)) for _ in range(2)]


def train(epoch):
    for x, y in loader:
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()


def test(epoch):
    total = 0
    for x, y in loader:
        out = model(x)
        total += ((out - y) ** 2).mean()
    print(epoch, float(total / len(loader)))


for epoch in range(2):
    train(epoch)
    test(epoch)
'''


def test_loop_over_a_model_that_another_function_trains():
    assert _lines(TRAINED_ELSEWHERE, "TRN102") == [20]
    message = _found(TRAINED_ELSEWHERE, "TRN102")[0].message
    assert "trained in `train()`" in message
    fixed = fix_source(TRAINED_ELSEWHERE, "t.py", CONFIG)[0]
    assert "@torch.no_grad()\ndef test" in fixed and not _found(fixed, "TRN102")
    exec(compile(fixed, "t.py", "exec"), {})  # the fixed script trains and evaluates


@pytest.mark.parametrize("change", [
    # the loop keeps what it computes in a container of a parameter: the graph may be used later
    ("def test(epoch):\n    total = 0", "def test(epoch, saved):\n    total = 0"),
    # the caller backpropagates what it returns
    ("    print(epoch, float(total / len(loader)))\n\n\nfor epoch in range(2):\n    train(epoch)\n    test(epoch)",
     "    return total\n\n\nfor epoch in range(2):\n    train(epoch)\n    penalty = test(epoch)\n"
     "    penalty.backward()"),
    # nothing builds an optimizer over the model: nothing says it is trained
    ("optimizer = torch.optim.SGD(model.parameters(), lr=0.1)", "optimizer = torch.optim.SGD([], lr=0.1)"),
    # a model of its own, bound in the function
    ("    total = 0\n    for x, y in loader:\n        out = model(x)",
     "    total = 0\n    model = nn.Linear(4, 2)\n    for x, y in loader:\n        out = model(x)"),
    ("        out = model(x)\n        total +=", "        out = model(x)\n        yield out\n        total +="),
    ("def test(epoch):", "@torch.no_grad()\ndef test(epoch):"),
])
def test_loop_over_a_model_trained_elsewhere_quiet(change):
    old, new = change
    assert old in TRAINED_ELSEWHERE
    source = TRAINED_ELSEWHERE.replace(old, new)
    if "saved" in new:
        source = source.replace("        total += ((out - y) ** 2).mean()",
                                "        saved.append(out)\n        total += ((out - y) ** 2).mean()")
    assert not _found(source, "TRN102")


def test_a_loss_object_trained_with_is_not_the_evaluated_model():
    source = TRAINED_ELSEWHERE.replace("loss = ((model(x) - y) ** 2).mean()", "loss = criterion(model(x), y)") \
        .replace("optimizer = torch", "criterion = nn.MSELoss()\noptimizer = torch") \
        .replace("def test(epoch):\n    total = 0\n    for x, y in loader:\n        out = model(x)\n"
                 "        total += ((out - y) ** 2).mean()",
                 "def test(epoch, net):\n    total = 0\n    for x, y in loader:\n        out = net(x)\n"
                 "        total += criterion(out, y)")
    assert "criterion(out, y)" in source
    assert not _found(source, "TRN102")


# -- TRN706: a loop around the stepping loop rebuilds the same optimizer (what it reads is not rebound there)

REBUILT = '''import torch
from torch import optim


class Trainer:
    def __init__(self, model, loader, n, lr):
        self.model, self.loader, self.iterations, self.lr = model, loader, n, lr

    def train(self):
        for iteration in range(self.iterations):
            optimizer = optim.Adam(self.model.parameters(), lr=self.lr)
            scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, len(self.loader))
            for x in self.loader:
                optimizer.zero_grad()
                loss = self.model(x).sum()
                loss.backward()
                optimizer.step()
                scheduler.step()
        return optimizer
'''


def test_optimizer_rebuilt_the_same_in_an_outer_loop():
    assert _lines(REBUILT, "TRN706") == [11, 12]
    namespace: dict = {}
    exec(compile(REBUILT, "t.py", "exec"), namespace)  # the claim: the new optimizer starts with no state
    model = torch.nn.Linear(2, 1)
    trainer = namespace["Trainer"](model, [torch.randn(4, 2)], 2, 0.1)
    optimizer = trainer.train()
    assert optimizer.state[model.weight]["step"].item() == 1.0  # one step per pass: the Adam moments restarted


@pytest.mark.parametrize("change", [
    ("        for iteration in range(self.iterations):\n            optimizer = optim.Adam(self.model.parameters(), "
     "lr=self.lr)",
     "        for lr in (0.1, 0.01):\n            optimizer = optim.Adam(self.model.parameters(), lr=lr)"),
    ("        for iteration in range(self.iterations):\n            optimizer",
     "        for iteration in range(self.iterations):\n            params = self.model.stage(iteration)\n"
     "            optimizer"),
])
def test_optimizer_rebuilt_from_what_the_loop_changes_is_quiet(change):
    old, new = change
    assert old in REBUILT
    source = REBUILT.replace(old, new).replace("optim.Adam(self.model.parameters(), lr=self.lr)\n            scheduler",
                                                "optim.Adam(params, lr=self.lr)\n            scheduler")
    assert not _found(source, "TRN706")  # the scheduler follows its new optimizer


# -- TRN205: the program seeds through a function of another project file (its summary says so)

OPTIONS = '''import random

import numpy as np
import torch


def set_random_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def parse_options(seed):
    opt = {"manual_seed": seed}
    set_random_seed(opt["manual_seed"])
    return opt
'''

TRAIN = '''import torch

from utils.options import parse_options


def train_pipeline():
    opt = parse_options(10)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = True  # runs must repeat: autotuning undoes it
    return opt
'''


def test_benchmark_in_a_program_seeded_by_a_helper_of_another_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "__init__.py").write_text("")
    (tmp_path / "utils" / "options.py").write_text(OPTIONS)
    (tmp_path / "train.py").write_text(TRAIN)
    assert places_found_by_check(tmp_path, "TRN205") == [("TRN205", "train.py", 8)]
    (tmp_path / "utils" / "options.py").write_text(OPTIONS.replace("    set_random_seed(opt[\"manual_seed\"])\n", ""))
    assert places_found_by_check(tmp_path, "TRN205") == []  # the helper no longer seeds: nothing to reproduce


# -- the project index: a class whose base is a model class of another project file (through a chain
#    of project files) is a model class; TRN501 in a method of a model

BASE = '''import torch


class Base(torch.nn.Module):
    pass
'''

KERNEL = '''from .module import Base


class Kernel(Base):
    def forward(self, x):
        return x
'''

INDEX_KERNEL = '''import torch
import torch.nn.functional as F

from .kernel import Kernel


class IndexKernel(Kernel):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)

    @property
    def covar(self):
        with torch.autograd.set_detect_anomaly(True):
            return self.lin.weight @ self.lin.weight.T

    def forward(self, x):
        return F.dropout(self.lin(x), 0.1)
'''


def test_subclass_of_a_project_model_class_is_a_model(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    package = tmp_path / "kernels"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "module.py").write_text(BASE)
    (package / "kernel.py").write_text(KERNEL)
    (package / "index_kernel.py").write_text(INDEX_KERNEL)
    assert places_found_by_check(tmp_path, "TRN501,TRN704") == [("TRN501", "index_kernel.py", 14),
                                                                ("TRN704", "index_kernel.py", 18)]
    (package / "module.py").write_text(BASE.replace("(torch.nn.Module)", "(object)"))
    assert places_found_by_check(tmp_path, "TRN501,TRN704") == []  # not a model: nothing runs it in training


def test_anomaly_mode_in_a_model_method_is_on_whenever_it_runs():
    """The claim: with set_detect_anomaly(True) as a context manager, anomaly mode is on inside it."""
    with torch.autograd.set_detect_anomaly(True):
        assert torch.is_anomaly_enabled()
    assert not torch.is_anomaly_enabled()
    source = INDEX_KERNEL.replace("from .kernel import Kernel\n", "").replace("(Kernel)", "(torch.nn.Module)")
    assert _lines(source, "TRN501") == [13]
    assert not _found(source.replace("        with torch.autograd.set_detect_anomaly(True):\n            return",
                                     "        if self.debug:\n            torch.autograd.set_detect_anomaly(True)\n"
                                     "        return"), "TRN501")


# -- TRN201: a worker_init_fn reached through a local name bound to it on some path (flow); the finding
#    is at the constant seed, where the fix goes, once for all the loaders that run it

CONDITIONAL_INIT = '''import random

import numpy as np
import torch
from torch.utils.data import DataLoader


def debugging_worker_init_fn(worker_id: int):
    random.seed(0)
    np.random.seed(worker_id)
    torch.manual_seed(worker_id)


def get_loaders(dataset, debug, worker_init_fn=None):
    if debug:
        worker_init_fn = debugging_worker_init_fn
    train = DataLoader(dataset, batch_size=4, num_workers=4, worker_init_fn=worker_init_fn)
    val = DataLoader(dataset, batch_size=4, num_workers=4, worker_init_fn=debugging_worker_init_fn)
    return train, val
'''


def test_worker_init_fn_bound_under_a_condition():
    found = _found(CONDITIONAL_INIT, "TRN201")
    assert [f.range.start.line + 1 for f in found] == [9]
    assert len(found[0].related) == 1
    assert "random.seed(0)" in found[0].message


def test_worker_init_fn_bound_to_a_worker_dependent_seed_is_quiet():
    source = CONDITIONAL_INIT.replace("random.seed(0)", "random.seed(worker_id)")
    assert not _found(source, "TRN201")
    source = CONDITIONAL_INIT.replace("        worker_init_fn = debugging_worker_init_fn\n",
                                      "        worker_init_fn = None\n").replace(
        "    val = DataLoader(dataset, batch_size=4, num_workers=4, worker_init_fn=debugging_worker_init_fn)\n",
        "    val = None\n")
    assert not _found(source, "TRN201")


# -- the project index: `from utils import *` binds the module aliases utils imports (`F`, `nn`), also
#    in a repository without a project marker whose files import their own package absolutely

UTILS = '''import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn(c):
    return nn.Sequential(nn.Conv2d(c, c, 3), nn.BatchNorm2d(c))
'''

NET = '''import torch
import torch.nn as nn

from pkg.models.utils import *


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = conv_bn(3)

    def forward(self, x):
        return F.dropout2d(self.block(x), p=0.1, inplace=True)
'''


@pytest.mark.parametrize("marker", [True, False])
def test_star_import_binds_the_module_aliases_of_a_project_file(tmp_path, marker):
    if marker:
        (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    models = tmp_path / "pkg" / "models"
    models.mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (models / "__init__.py").write_text("")
    (models / "utils.py").write_text(UTILS)
    (models / "net.py").write_text(NET)
    assert places_found_by_check(tmp_path, "TRN704") == [("TRN704", "net.py", 13)]
    (models / "net.py").write_text(NET.replace("class Net", "F = None\n\n\nclass Net"))
    assert places_found_by_check(tmp_path, "TRN704") == []  # the file binds `F` itself: not the star import's
    (models / "net.py").write_text(NET)
    no_f = UTILS.replace("import torch.nn.functional as F\n", "")
    (models / "utils.py").write_text(no_f + "\n__all__ = ['conv_bn']\n")
    assert places_found_by_check(tmp_path, "TRN704") == []  # nothing binds `F` as torch's


# -- TRN102: the model comes in eval mode from an in-file loader (as a tuple element) and runs in a
#    helper called in the loop

HELPER_RUNS = '''import sys
import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def decode(self, x):
        return self.lin(x).argmax(-1)


def load_model():
    model = Tagger()
    model.eval()
    return model, {"a": 0}


def run_model(model, data):
    return model.decode(torch.stack(data))


def predict(lines):
    model, vocab = load_model()
    data = []
    for line in lines:
        data.append(torch.randn(4))
        if len(data) == 2:
            print(run_model(model, data))
            data = []


if __name__ == "__main__":
    predict(sys.argv[1:])
'''


def test_model_loaded_in_eval_mode_and_run_by_a_helper_in_the_loop():
    assert _lines(HELPER_RUNS, "TRN102") == [31]
    fixed = fix_source(HELPER_RUNS, "t.py", CONFIG)[0]
    assert "@torch.no_grad()\ndef predict" in fixed and not _found(fixed, "TRN102")
    exec(compile(fixed, "t.py", "exec"), {"__name__": "t"})


@pytest.mark.parametrize("change", [
    ("def run_model(model, data):", "@torch.no_grad()\ndef run_model(model, data):"),
    ("    model.eval()\n    return model, {\"a\": 0}", "    return model, {\"a\": 0}"),
    ("    return model.decode(torch.stack(data))", "    return len(data)"),  # does not run the model
    ("    model, vocab = load_model()", "    vocab, model = load_model()"),  # not the evaluated element
    ("    return model.decode(torch.stack(data))",
     "    loss = model.decode(torch.stack(data)).float().sum()\n    loss.backward()\n    return loss"),
])
def test_model_run_by_a_helper_quiet(change):
    old, new = change
    assert old in HELPER_RUNS
    assert not _found(HELPER_RUNS.replace(old, new), "TRN102")


def test_a_file_that_gets_torch_from_a_star_import_is_linted(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    utils = HELPER_RUNS.split("def load_model")[0] + "stack = torch.stack\nrandn = torch.randn\n"
    predict = "import sys\nfrom utils import *\n\n\ndef load_model" + HELPER_RUNS.split("def load_model")[1]
    predict = predict.replace("torch.stack(data)", "stack(data)").replace("torch.randn(4)", "randn(4)")
    assert "torch" not in predict
    (tmp_path / "utils.py").write_text(utils)
    (tmp_path / "predict.py").write_text(predict)
    assert places_found_by_check(tmp_path, "TRN102") == [("TRN102", "predict.py", 21)]


def test_model_run_by_a_helper_under_no_grad_is_quiet():
    source = HELPER_RUNS.replace("    return model.decode(torch.stack(data))",
                                 "    with torch.no_grad():\n        return model.decode(torch.stack(data))")
    assert not _found(source, "TRN102")


LCM = '''from .kernel import Kernel
from .index_kernel import IndexKernel


class LCMKernel(Kernel):
    def __init__(self, n):
        super().__init__()
        self.kernels = [None] * n
        for i in range(n):
            self.kernels[i] = IndexKernel()
'''


def test_a_torch_free_file_deriving_from_a_project_model_is_linted(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    package = tmp_path / "kernels"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "module.py").write_text(BASE)
    (package / "kernel.py").write_text(KERNEL)
    (package / "index_kernel.py").write_text(INDEX_KERNEL)
    (package / "lcm_kernel.py").write_text(LCM)
    assert ("TRN705", "lcm_kernel.py", 8) in places_found_by_check(tmp_path, "TRN705")


def test_two_optimizers_built_in_one_outer_loop_are_linted(tmp_path):
    # Each build asked whether the other was rebuilt the same way, which asked back: a
    # RecursionError, reported as "cannot lint" (TRN000) on a real repository.
    source = '''import torch

def fit(model, head, loader, stages):
    for stage in range(stages):
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        head_optimizer = torch.optim.SGD(head.parameters(), lr=1e-2)
        for x, y in loader:
            optimizer.zero_grad()
            head_optimizer.zero_grad()
            torch.nn.functional.mse_loss(head(model(x)), y).backward()
            optimizer.step()
            head_optimizer.step()
'''
    (tmp_path / "fit.py").write_text(source)
    found = places_found_by_check(tmp_path, "TRN000,TRN706")
    assert "TRN000" not in [code for code, _, _ in found], found
    assert sorted(line for code, _, line in found if code == "TRN706") == [5, 6]
