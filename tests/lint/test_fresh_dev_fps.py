"""False findings of the first lint of fresh dev repositories (h/prec5, bench/ecosystem): each fixed
shape, a look-alike that must stay found, and the torch fact the fix rests on, checked against torch.

- TRN705, LTSF-Linear FEDformer `series_decomp_multi`: a plain list of an in-file Module class that
  holds only an AvgPool1d and a number.
- TRN102, kospeech `GreedySearch.search`: `model.recognize(x)` on a model whose class is not known in
  that file, where every project class that defines `recognize` decorates it with `torch.no_grad()`.
"""

from __future__ import annotations

import textwrap

import torch
import torch.nn as nn
from project_helpers import places_found_by_check, write_project


# -- TRN705: a list of stateless in-file modules ---------------------------------------------------

STATELESS = """\
    import math
    import torch
    import torch.nn as nn
    class MovingAvg(nn.Module):
        def __init__(self, kernel_size):
            super().__init__()
            self.kernel_size = kernel_size
            self.avg = nn.AvgPool1d(kernel_size=kernel_size, stride=1, padding=0)
        def forward(self, x):
            front = x[:, 0:1, :].repeat(1, self.kernel_size - 1 - math.floor((self.kernel_size - 1) // 2), 1)
            end = x[:, -1:, :].repeat(1, math.floor((self.kernel_size - 1) // 2), 1)
            return self.avg(torch.cat([front, x, end], dim=1).permute(0, 2, 1)).permute(0, 2, 1)
    class Decomp(nn.Module):
        def __init__(self, kernel_sizes):
            super().__init__()
            self.moving_avg = [MovingAvg(k) for k in kernel_sizes]
            self.layer = nn.Linear(1, len(kernel_sizes))
        def forward(self, x):
            means = torch.cat([f(x).unsqueeze(-1) for f in self.moving_avg], dim=-1)
            return torch.sum(means * torch.softmax(self.layer(x.unsqueeze(-1)), -1), dim=-1)
"""


def test_a_list_of_stateless_in_file_modules_is_not_reported(tmp_path):
    write_project(tmp_path, {"decomp.py": STATELESS}, dedent=True)
    assert places_found_by_check(tmp_path, "TRN705") == []


def test_a_list_of_in_file_modules_with_weights_or_a_mode_is_still_reported(tmp_path):
    weights = STATELESS.replace("self.avg = nn.AvgPool1d(kernel_size=kernel_size, stride=1, padding=0)",
                                "self.avg = nn.Conv1d(1, 1, kernel_size)")
    mode = STATELESS.replace("        def forward(self, x):\n            front",
                             "        def forward(self, x):\n            if self.training:\n"
                             "                x = x + 0.01 * torch.randn_like(x)\n            front", 1)
    norm = STATELESS.replace("self.avg = nn.AvgPool1d(kernel_size=kernel_size, stride=1, padding=0)",
                             "self.avg = nn.AvgPool1d(kernel_size=kernel_size, stride=1, padding=0)\n"
                             "            self.norm = nn.BatchNorm1d(1)")
    for variant in (weights, mode, norm):
        assert variant != STATELESS
        write_project(tmp_path, {"decomp.py": variant}, dedent=True)
        line = textwrap.dedent(variant).splitlines().index("        self.moving_avg = [MovingAvg(k) for k in kernel_sizes]") + 1
        assert places_found_by_check(tmp_path, "TRN705") == [("TRN705", "decomp.py", line)], variant


def test_torch_registers_nothing_for_a_stateless_module():
    """What the fix rests on: the listed modules have no parameters, buffers or state-dict entries,
    so a ModuleList of them would add nothing to the parent's parameters(), state_dict() or .to()."""
    namespace: dict = {}
    exec(textwrap.dedent(STATELESS), namespace)
    plain = namespace["Decomp"]([3, 5])
    registered = namespace["Decomp"]([3, 5])
    registered.moving_avg = nn.ModuleList(registered.moving_avg)
    assert [n for n, _ in plain.named_parameters()] == [n for n, _ in registered.named_parameters()]
    assert list(plain.state_dict()) == list(registered.state_dict())
    assert list(registered.buffers()) == []
    x = torch.randn(2, 16, 4)
    plain.eval()
    registered.eval()
    registered.load_state_dict(plain.state_dict())
    assert torch.equal(plain(x), registered(x))


# -- TRN102: a method every project class runs under no_grad -----------------------------------------

MODELS = """\
    import torch
    import torch.nn as nn
    class BaseModel(nn.Module):
        @torch.no_grad()
        def recognize(self, inputs, lengths):
            raise NotImplementedError
    class EncoderModel(BaseModel):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 4)
        def forward(self, inputs, lengths):
            return self.fc(inputs)
        @torch.no_grad()
        def recognize(self, inputs, lengths):
            return self.forward(inputs, lengths).max(-1)[1]
"""

SEARCH = """\
    import torch.nn as nn
    class GreedySearch(object):
        def search(self, model: nn.Module, batches) -> list:
            if isinstance(model, nn.DataParallel):
                model = model.module
            model.eval()
            found = []
            for inputs, lengths in batches:
                y_hats = model.recognize(inputs, lengths)
                found.append(y_hats.cpu().numpy())
            return found
"""


def test_a_method_every_project_class_defines_under_no_grad_is_not_an_autograd_run(tmp_path):
    write_project(tmp_path, {"models/model.py": MODELS, "models/__init__.py": "", "decode/search.py": SEARCH,
                             "decode/__init__.py": ""}, dedent=True)
    assert places_found_by_check(tmp_path, "TRN102") == []


def test_the_same_run_is_reported_when_one_project_class_defines_it_with_autograd(tmp_path):
    other = MODELS + textwrap.indent(textwrap.dedent("""\
        class DecoderModel(BaseModel):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 4)
            def recognize(self, inputs, lengths):
                return self.fc(inputs).max(-1)[1]
    """), "    ")
    write_project(tmp_path, {"models/model.py": other, "models/__init__.py": "", "decode/search.py": SEARCH,
                             "decode/__init__.py": ""}, dedent=True)
    assert places_found_by_check(tmp_path, "TRN102") == [("TRN102", "search.py", 9)]


def test_torch_a_method_decorated_with_no_grad_records_no_graph():
    namespace: dict = {}
    exec(textwrap.dedent(MODELS), namespace)
    model = namespace["EncoderModel"]().eval()
    x = torch.randn(3, 8)
    assert model.forward(x, None).requires_grad
    assert torch.is_grad_enabled()
    inner: list = []
    model.fc.register_forward_hook(lambda m, i, o: inner.append(o))
    model.recognize(x, None)
    assert not inner[-1].requires_grad  # the forward inside recognize built no graph


# -- TRN102: a project that pins torch < 0.4 -----------------------------------------------------------

VOLATILE_EVAL = """\
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.autograd import Variable
    model = nn.Linear(4, 2)
    test_loader = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(3)]
    def test(model):
        model.eval()
        correct = 0
        for data, target in test_loader:
            data, target = Variable(data, volatile=True), Variable(target)
            output = model(data)
            pred = output.data.max(1, keepdim=True)[1]
            correct += pred.eq(target.data.view_as(pred)).cpu().sum()
        return correct
"""


def test_no_eval_finding_where_the_project_pins_a_torch_without_no_grad(tmp_path):
    write_project(tmp_path, {"mnist/teacher.py": VOLATILE_EVAL}, dedent=True)
    (tmp_path / "pyproject.toml").unlink()
    (tmp_path / "requirements.txt").write_text("numpy==1.14.0\ntorch==0.3.0.post4\ntorchvision==0.2.0\n")
    assert places_found_by_check(tmp_path, "TRN102") == []
    (tmp_path / "requirements.txt").write_text("numpy==1.14.0\ntorch==1.0.0\ntorchvision==0.2.0\n")
    assert places_found_by_check(tmp_path, "TRN102") == [("TRN102", "teacher.py", 12)]


def test_torch_volatile_no_longer_turns_recording_off():
    """Why the pin decides: since 0.4 `volatile=True` is ignored (with a warning) and the forward
    records a graph, so on a later torch the same loop is the bug; before 0.4 it was the way to run
    without one, and `torch.no_grad` did not exist."""
    import warnings

    from torch.autograd import Variable

    layer = nn.Linear(4, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = Variable(torch.randn(3, 4), volatile=True)
    assert any("volatile" in str(w.message) for w in caught)
    assert layer(x).grad_fn is not None


# -- TRN102: a helper that may fit something through the model's methods -----------------------------

FINETUNE = """\
    import torch
    import torch.nn as nn
    class MetaTemplate(nn.Module):
        def __init__(self, n_way):
            super().__init__()
            self.n_way = n_way
            self.feature = nn.Linear(16, 8)
    class ProtoNet(MetaTemplate):
        def set_forward(self, z, is_feature=True):
            return -torch.cdist(z[:, 1:].reshape(-1, z.size(-1)), z[:, :1].mean(1))
    class BaselineFinetune(MetaTemplate):
        def set_forward(self, z, is_feature=True):
            return self.set_forward_adaptation(z, is_feature)
        def set_forward_adaptation(self, z, is_feature=True):
            clf = nn.Linear(z.size(-1), self.n_way)
            opt = torch.optim.SGD(clf.parameters(), lr=0.01)
            support = z[:, :1].reshape(-1, z.size(-1))
            labels = torch.arange(self.n_way)
            for _ in range(10):
                opt.zero_grad()
                loss = nn.functional.cross_entropy(clf(support), labels)
                loss.backward()
                opt.step()
            return clf(z[:, 1:].reshape(-1, z.size(-1)))
"""

EVALUATE = """\
    import torch
    from methods.template import BaselineFinetune, ProtoNet
    def feature_evaluation(features, model, adaptation=False):
        z_all = torch.from_numpy(features)
        if adaptation:
            scores = model.set_forward_adaptation(z_all, is_feature=True)
        else:
            scores = model.set_forward(z_all, is_feature=True)
        return scores.data.cpu().numpy().argmax(axis=1)
    def main(files, method):
        model = BaselineFinetune(5) if method == "baseline" else ProtoNet(5)
        model.eval()
        acc = []
        for features in files:
            acc.append(feature_evaluation(features, model, adaptation=False))
        return acc
"""


def test_a_helper_calling_a_method_that_a_project_class_trains_in_is_not_an_evaluation(tmp_path):
    write_project(tmp_path, {"methods/template.py": FINETUNE, "methods/__init__.py": "", "test.py": EVALUATE},
                  dedent=True)
    assert places_found_by_check(tmp_path, "TRN102") == []


def test_the_same_helper_is_reported_when_no_project_class_trains_in_its_methods(tmp_path):
    inference_only = FINETUNE.replace("""            for _ in range(10):
                opt.zero_grad()
                loss = nn.functional.cross_entropy(clf(support), labels)
                loss.backward()
                opt.step()
""", "")
    write_project(tmp_path, {"methods/template.py": inference_only, "methods/__init__.py": "", "test.py": EVALUATE},
                  dedent=True)
    assert places_found_by_check(tmp_path, "TRN102") == [("TRN102", "test.py", 15)]


def test_torch_no_grad_breaks_a_probe_fitted_inside_the_evaluation():
    """Why quiet: under the no_grad the rule would ask for, fitting the probe raises."""
    import pytest

    namespace: dict = {}
    exec(textwrap.dedent(FINETUNE), namespace)
    model = namespace["BaselineFinetune"](5).eval()
    z = torch.randn(5, 3, 16)
    assert model.set_forward(z).shape == (10, 5)
    with torch.no_grad(), pytest.raises(RuntimeError, match="does not require grad"):
        model.set_forward(z)
