"""TRN705 on a list of modules built by a module-level helper and stored by a model class
(`self.info, self.module_list = create_modules(blocks)`): the helper creates the list empty, fills it
with modules and returns it, so the model's attribute is a plain list. The program failed before (no
finding); the quiet twins stay quiet; the claim (no parameters registered) and the fix are checked
against torch."""

from __future__ import annotations

import subprocess
import sys

import torch

from traindoctor.config import Config
from traindoctor.lint import fix_source, lint_source

CONFIG = Config(select=("strict",))

DARKNET = '''import torch.nn as nn


def create_modules(blocks):
    info = blocks[0]
    module_list = []
    channels = 3
    for width in blocks[1:]:
        module = nn.Sequential()
        module.add_module("conv", nn.Conv2d(channels, width, 3, padding=1))
        module.add_module("act", nn.LeakyReLU(0.1))
        module_list.append(module)
        channels = width
    return (info, module_list)


class Darknet(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.info, self.module_list = create_modules(blocks)

    def forward(self, x):
        for i in range(len(self.module_list)):
            x = self.module_list[i](x)
        return x
'''


def _lines(source: str) -> list[int]:
    return [f.range.start.line + 1 for f in lint_source(source, "t.py", CONFIG).findings if f.code == "TRN705"]


def test_helper_returns_a_plain_list_into_a_model(tmp_path):
    assert _lines(DARKNET) == [6]
    namespace: dict = {}
    exec(compile(DARKNET, "t.py", "exec"), namespace)
    net = namespace["Darknet"](["net", 8, 16])
    assert list(net.parameters()) == []  # the claim: an optimizer over net.parameters() trains nothing
    fixed = fix_source(DARKNET, "t.py", CONFIG, unsafe=True)[0]
    assert "    module_list = nn.ModuleList()\n" in fixed and _lines(fixed) == []
    path = tmp_path / "fixed.py"
    path.write_text(fixed)
    proc = subprocess.run([sys.executable, "-m", "pyflakes", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    fixed_namespace: dict = {}
    exec(compile(fixed, "t.py", "exec"), fixed_namespace)
    fixed_net = fixed_namespace["Darknet"](["net", 8, 16])
    assert len(list(fixed_net.parameters())) == 4 and "module_list.1.conv.weight" in fixed_net.state_dict()
    assert fixed_net(torch.randn(1, 3, 8, 8)).shape == (1, 16, 8, 8)  # the fixed model runs as before


def test_helper_list_twins_stay_quiet():
    # the model wraps what it gets
    wrapped = DARKNET.replace("self.info, self.module_list = create_modules(blocks)",
                              "self.info, layers = create_modules(blocks)\n        self.module_list = nn.ModuleList(layers)")
    assert _lines(wrapped) == []
    # the helper already returns a ModuleList
    assert _lines(DARKNET.replace("    module_list = []\n", "    module_list = nn.ModuleList()\n")) == []
    # the list is not stored by a model: a plain function uses it
    unused = DARKNET.split("class Darknet")[0] + "\n\ndef count(blocks):\n    return len(create_modules(blocks)[1])\n"
    assert _lines(unused) == []
    # the helper does not return the list itself
    assert _lines(DARKNET.replace("return (info, module_list)", "return (info, len(module_list))")) == []
