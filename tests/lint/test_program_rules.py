"""Program-level rules (issue 10): TRN204, TRN501, TRN502, TRN601-603, TRN704, TRN705.
Their YAML examples are tested by test_rule_examples.py and their fixes run in
runnable/; these tests check that what the rules claim is true on the installed
torch, and the version- and shape-dependent behaviour the examples cannot show."""

from __future__ import annotations

import pickle

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from casefiles import CONFIG

from traindoctor.lint import lint_source
from traindoctor.lint.rules import trn602_weights_only_load


def codes(source: str, code: str) -> list[tuple[int, str]]:
    result = lint_source(source, "t.py", CONFIG)
    assert result.error is None, result.error
    return [(f.range.start.line + 1, f.message) for f in result.findings if f.code == code]


def test_trn601_the_class_is_not_a_context_manager():
    with pytest.raises(TypeError):
        with torch.no_grad:  # type: ignore[attr-defined]
            pass

    @torch.no_grad  # the decorator form without the call works (not flagged)
    def double(x):
        return x * 2

    assert not double(torch.ones(1, requires_grad=True)).requires_grad
    assert codes("import torch\n@torch.no_grad\ndef f(x):\n    return x\n", "TRN601") == []


def test_trn603_backward_of_a_value_computed_under_no_grad_raises():
    model = nn.Linear(3, 1)
    with torch.no_grad():
        loss = model(torch.randn(2, 3)).sum()
    with pytest.raises(RuntimeError, match="does not require grad"):
        loss.backward()


def test_trn603_nested_enable_grad_and_functions_only_called_later():
    source = (
        "import torch\n"
        "def step(model, x):\n"
        "    with torch.no_grad():\n"
        "        with torch.set_grad_enabled(True):\n"
        "            loss = model(x).sum()\n"
        "    loss.backward()\n"
    )
    assert codes(source, "TRN603") == []
    source = source.replace("        with torch.set_grad_enabled(True):\n            loss", "        loss")
    assert [line for line, _ in codes(source, "TRN603")] == [5]


def test_trn704_dropout_stays_on_in_eval_mode():
    x = torch.ones(1, 1000)
    torch.manual_seed(0)

    class Net(nn.Module):
        def forward(self, x):
            return F.dropout(x, 0.5)

    net = Net().eval()
    assert (net(x) == 0).any()  # still dropping after eval()
    assert not (F.alpha_dropout(x, 0.5) != x).any()  # alpha_dropout: never on by default


def test_trn704_only_methods_forward_reaches():
    source = (
        "import torch.nn as nn\n"
        "import torch.nn.functional as F\n"
        "class Net(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x\n"
        "    def sample(self, x):\n"
        "        return F.dropout(x, 0.5)  # MC sampling helper, never reached from forward\n"
    )
    assert codes(source, "TRN704") == []


def test_trn705_plain_list_is_not_registered():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Linear(2, 2) for _ in range(3)]

    assert list(Net().parameters()) == [] and Net().state_dict() == {}


def test_trn705_fix_is_unsafe_when_the_class_uses_list_only_methods():
    source = (
        "import torch.nn as nn\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.layers = [nn.Linear(2, 2) for _ in range(3)]\n"
        "        self.layers.reverse()\n"
    )
    result = lint_source(source, "t.py", CONFIG)
    (finding,) = [f for f in result.findings if f.code == "TRN705"]
    assert finding.fix is not None and not finding.fix.safe


SAVE_LOAD = (
    "import torch\n"
    "def roundtrip(model, path):\n"
    "    torch.save(model, path)\n"
    "    return torch.load(path)\n"
)


@pytest.mark.parametrize("version, fires", [((2, 5), False), ((2, 6), True), ((2, 13), True), (None, False)])
def test_trn602_is_version_aware(monkeypatch, version, fires):
    monkeypatch.setattr(trn602_weights_only_load, "torch_version", lambda path=None: version)
    found = codes(SAVE_LOAD, "TRN602")
    assert bool(found) == fires
    if fires:
        assert f"torch {version[0]}.{version[1]}" in found[0][1]


def test_trn602_whole_module_load_fails_on_this_torch(tmp_path):
    from traindoctor.lint.analysis.environment import torch_version

    version = torch_version()
    path = tmp_path / "m.pt"
    torch.save(nn.Linear(2, 2), path)
    if version is not None and version >= (2, 6):
        with pytest.raises(pickle.UnpicklingError):
            torch.load(path)
    assert isinstance(torch.load(path, weights_only=False), nn.Linear)


def test_trn204_needs_a_seeding_parent():
    source = (
        "import torch.multiprocessing as mp\n"
        "def worker(rank):\n"
        "    pass\n"
        "mp.spawn(worker, nprocs=2)\n"
    )
    assert codes(source, "TRN204") == []
    guarded = "import torch\n" + source.replace("mp.spawn", "if __name__ == '__main__':\n    torch.manual_seed(0)\n"
                                                 "    mp.spawn")
    assert [line for line, _ in codes(guarded, "TRN204")] == [3]
    # module-level seeding outside the main guard runs again in every spawned process
    assert codes("import torch\ntorch.manual_seed(0)\n" + source, "TRN204") == []


def test_trn501_only_for_the_whole_run():
    source = (
        "import torch\n"
        "def helper():\n"
        "    torch.autograd.set_detect_anomaly(True)\n"
    )
    assert codes(source, "TRN501") == []  # a function that does not train


def test_trn707_replaced_head_is_not_in_the_optimizer():
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    model[1] = nn.Linear(4, 2)
    before = model[1].weight.detach().clone()
    model(torch.randn(3, 4)).sum().backward()
    optimizer.step()
    assert model[1].weight.grad is not None and torch.equal(model[1].weight, before)


def test_trn707_same_main_block_and_across_blocks():
    source = (
        "import torch\n"
        "import torchvision\n"
        "if __name__ == '__main__':\n"
        "    model = torchvision.models.resnet18()\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    model.fc = torch.nn.Linear(512, 10)\n"
    )
    assert [line for line, _ in codes(source, "TRN707")] == [6]
    rebuilt = source + "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    assert codes(rebuilt, "TRN707") == []


def test_appended_keyword_keeps_a_multiline_call_indented():
    from traindoctor.lint import fix_source

    source = (
        "from torch.utils.data import DataLoader\n"
        "def train(model, ds, device):\n"
        "    loader = DataLoader(\n"
        "        ds,\n"
        "        num_workers=2,\n"
        "    )\n"
        "    for x in loader:\n"
        "        model(x.to(device, non_blocking=True)).backward()\n"
    )
    fixed, _ = fix_source(source, "t.py", CONFIG)
    assert "        num_workers=2, pin_memory=True,\n    )\n" in fixed


def test_trn204_spawned_worker_ignores_the_parent_seed_until_fixed(tmp_path):
    """The worker's first draw is not the parent's seed's draw (and differs between runs on
    torch 2.13); after the fix it is the draw of the parent's seed (7)."""
    import ast
    import subprocess
    import sys
    from pathlib import Path

    from traindoctor.lint import fix_source

    def first_draw(path: Path) -> float:
        out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=180,
                             cwd=path.parent)
        assert out.returncode == 0, out.stderr
        return ast.literal_eval(out.stdout.strip().splitlines()[-1])[1]

    def draw_with(seed: int) -> float:
        generator = torch.Generator().manual_seed(seed)
        return torch.rand(1, generator=generator).item()

    path = Path(__file__).parent / "runnable" / "trn204_spawned_worker.py"
    assert first_draw(path) != pytest.approx(draw_with(7))
    fixed, _ = fix_source(path.read_text(), str(path), CONFIG, unsafe=True)
    target = tmp_path / path.name
    target.write_text(fixed)
    assert first_draw(target) == pytest.approx(draw_with(7))
