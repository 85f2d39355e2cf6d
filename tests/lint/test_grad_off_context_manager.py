"""TRN101 false finding of the first lint of real-stanford/diffusion_policy (h/prec7, group A2, bench/ecosystem):
`get_latents` sums an MSE in a loop inside `with eval_mode(self.action_ae, self.obs_encoding_net, no_grad=True)`,
a project context manager (in another file) whose `__enter__` enters the `torch.no_grad()` it built in
`__init__` when its `no_grad` argument is true. No graph is recorded, so none is kept. The same context
manager without `no_grad=True` leaves autograd on, and the sum is still found; so is a class whose
`__enter__` only switches modes."""

from __future__ import annotations

import textwrap

import torch
import torch.nn as nn
import torch.nn.functional as F
from project_helpers import places_found_by_check, write_project

UTILS = """\
    import torch


    class eval_mode:
        def __init__(self, *models, no_grad=False):
            self.models = models
            self.no_grad = no_grad
            self.no_grad_context = torch.no_grad()

        def __enter__(self):
            self.prev_states = []
            for model in self.models:
                self.prev_states.append(model.training)
                model.train(False)
            if self.no_grad:
                self.no_grad_context.__enter__()

        def __exit__(self, *args):
            if self.no_grad:
                self.no_grad_context.__exit__(*args)
            for model, state in zip(self.models, self.prev_states):
                model.train(state)
            return False


    class modes_only:
        def __init__(self, *models):
            self.models = models

        def __enter__(self):
            for model in self.models:
                model.train(False)

        def __exit__(self, *args):
            for model in self.models:
                model.train(True)
            return False
"""

POLICY = """\
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    from pkg.utils import eval_mode, modes_only


    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Linear(4, 4)
            self.decoder = nn.Linear(4, 4)

        def quiet(self, loader):
            total = 0
            with eval_mode(self.encoder, self.decoder, no_grad=True):
                for act in loader:
                    rec = self.decoder(self.encoder(act))
                    total += F.mse_loss(act, rec, reduction="sum")
            print(float(total))

        def grad_on(self, loader):
            total = 0
            with eval_mode(self.encoder, self.decoder):
                for act in loader:
                    rec = self.decoder(self.encoder(act))
                    total += F.mse_loss(act, rec, reduction="sum")
            print(float(total))

        def modes(self, loader):
            total = 0
            with modes_only(self.encoder, self.decoder):
                for act in loader:
                    rec = self.decoder(self.encoder(act))
                    total += F.mse_loss(act, rec, reduction="sum")
            print(float(total))
"""

# The same shape in one file, the flag passed by position.
ONE_FILE = """\
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class frozen:
        def __init__(self, off):
            self.off = off
            self.context = torch.no_grad()

        def __enter__(self):
            if self.off:
                self.context.__enter__()

        def __exit__(self, *args):
            if self.off:
                self.context.__exit__(*args)


    net = nn.Linear(4, 4)


    def quiet(loader):
        total = 0
        with frozen(True):
            for x in loader:
                total += F.mse_loss(net(x), x)
        print(float(total))


    def found(loader):
        total = 0
        with frozen(False):
            for x in loader:
                total += F.mse_loss(net(x), x)
        print(float(total))
"""


def test_a_project_context_manager_that_enters_no_grad_quiets_the_sum(tmp_path):
    write_project(tmp_path, {"pkg/__init__.py": "", "pkg/utils.py": UTILS, "pkg/policy.py": POLICY}, dedent=True)
    # grad_on (no_grad left False) and modes (only eval mode) keep their graphs; quiet does not.
    assert places_found_by_check(tmp_path, "TRN101", fields=("file", "line")) == [("policy.py", 27), ("policy.py", 35)]


def test_an_in_file_context_manager_with_a_positional_flag(tmp_path):
    write_project(tmp_path, {"train.py": ONE_FILE}, dedent=True)
    assert places_found_by_check(tmp_path, "TRN101", fields=("file", "line")) == [("train.py", 35)]


def _eval_mode_class():
    namespace: dict = {}
    exec(textwrap.dedent(UTILS), namespace)
    return namespace["eval_mode"]


def test_the_context_manager_records_no_graph_only_with_its_flag():
    eval_mode = _eval_mode_class()
    net = nn.Linear(4, 4)
    x = torch.randn(2, 4)
    with eval_mode(net, no_grad=True):
        loss = F.mse_loss(net(x), x, reduction="sum")
    assert loss.grad_fn is None and not loss.requires_grad
    with eval_mode(net):
        loss = F.mse_loss(net(x), x, reduction="sum")
    assert loss.grad_fn is not None
    assert net.training  # modes restored on exit
