"""TRN202 in unit tests: a test that seeds torch and draws inputs from numpy is not made flaky by
the unseeded draw when every assertion reads the values only through their shape (issue 27's
held-out class "unit tests whose assertions hold for any random draw"). The test runs the test
functions on many unseeded draws to show that they pass for each, and keeps the look-alikes whose
assertions read values reported."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from traindoctor.config import Config
from traindoctor.lint import lint_source

UNIT_TESTS = """
import unittest

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)


def make_batch(n):
    return torch.from_numpy(np.random.randn(n, 8).astype("float32"))


def test_linear_keeps_the_batch():
    out = nn.Linear(8, 3)(make_batch(4))
    assert out.shape == (4, 3)
    assert out.dtype == torch.float32 and len(out) == 4


class TestEncoder(unittest.TestCase):
    def test_encoder_output(self):
        x = torch.from_numpy(np.random.rand(2, 8).astype("float32"))
        out = nn.Sequential(nn.Linear(8, 16), nn.ReLU())(x)
        self.assertEqual(out.size(0), 2)
        self.assertEqual(tuple(out.shape[1:]), (16,))
{extra}
"""

VALUE_DEPENDENT = {
    "a value compared": """
def test_first_output_is_positive():
    x = torch.from_numpy(np.random.randn(4, 8).astype("float32"))
    assert nn.Linear(8, 3)(x)[0, 0] > 0
""",
    "a close comparison": """
def test_matches_numpy():
    x = np.random.randn(4, 8).astype("float32")
    assert torch.allclose(torch.from_numpy(x).sum(), torch.tensor(3.0))
""",
}


def _trn202(source: str, path: str = "tests/test_layers.py") -> list:
    result = lint_source(textwrap.dedent(source), path, Config(select=("TRN202",)))
    assert result.error is None, result.error
    return [f for f in result.findings if f.code == "TRN202"]


def test_the_shape_only_tests_pass_for_any_draw():
    namespace: dict = {}
    exec(UNIT_TESTS.format(extra=""), namespace)  # noqa: S102 - the test's own program
    for _ in range(20):
        np.random.seed(None)  # a fresh, unseeded numpy draw each time
        namespace["test_linear_keeps_the_batch"]()
        namespace["TestEncoder"]("test_encoder_output").test_encoder_output()


@pytest.mark.parametrize("path", ["tests/test_layers.py", "check_layers.py"])
def test_trn202_is_quiet_on_draws_of_tests_that_assert_only_shapes(path):
    assert _trn202(UNIT_TESTS.format(extra=""), path) == []


@pytest.mark.parametrize("name", list(VALUE_DEPENDENT))
def test_trn202_still_fires_when_a_test_asserts_on_drawn_values(name):
    [found] = _trn202(UNIT_TESTS.format(extra=VALUE_DEPENDENT[name]))
    assert "numpy" in found.message


def test_trn202_still_fires_on_a_draw_outside_tests():
    training = UNIT_TESTS.format(extra="\nnoise = np.random.randn(8)\n")
    assert len(_trn202(training)) == 1


def test_trn202_still_fires_in_a_script_evaluation_named_test():
    script = """
import numpy as np
import torch

torch.manual_seed(0)


def test(model, loader):
    correct = 0
    for x, y in loader:
        x = x + torch.from_numpy(np.random.normal(0, 0.1, x.shape).astype("float32"))
        out = model(x)
        assert out.shape[0] == y.shape[0]
        correct += (out.argmax(1) == y).sum().item()
    return correct
"""
    assert len(_trn202(script, "main.py")) == 1
