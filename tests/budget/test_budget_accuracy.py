"""The budget's prediction against exact accounting of a real CPU step, for five real architectures.

Predicted (a fake step run by `traindoctor budget` on the unchanged script): parameters, gradients and
optimizer state, and the activations alive when backward starts. Exact: the same script's model in a
real CPU step, its tensors' sizes and the storages autograd saved (saved_tensors_hooks). Within 5 %.
"""

from __future__ import annotations

import pytest

from budget_helpers import PYTHON, SCRIPTS, budget, exact_step

pytestmark = pytest.mark.slow

# The first five were written with the predictor (the dev half); lstm and mixer were added after it was
# finished and run once (the held-out half: a cuDNN-free recurrent net, and dropout masks).
BATCH = {"mlp": 16, "resnet18": 4, "gpt": 4, "unet": 4, "vit": 4, "lstm": 4, "mixer": 4}
TOLERANCE = 0.05


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("budget-accuracy")


# Found on the held-out half: the workspace oneDNN's LSTM kernel keeps for backward is larger than its
# fake (meta) kernel says, so saved activations come out 59 % low. Named in the report, not fixed.
RNN_GAP = pytest.mark.xfail(strict=True, reason="kernel workspace of RNNs is not counted exactly")


@pytest.mark.parametrize("name", [pytest.param(n, marks=RNN_GAP) if n == "lstm" else n for n in sorted(BATCH)])
def test_prediction_matches_exact_accounting(name, workdir):
    code, report, stderr = budget("--no-levers", "--", PYTHON, str(SCRIPTS / "train_model.py"), "--model", name,
                                  "--batch", str(BATCH[name]), "--device", "cuda", cwd=workdir)
    assert report is not None, stderr
    assert code == 0, stderr  # a small model fits the default GPU
    exact = exact_step(name, BATCH[name])
    predicted = {
        "parameters": report["by_category"]["parameters"],
        "gradients": report["steady_state"]["gradients"],
        "optimizer_state": report["steady_state"]["optimizer_state"],
        "activations": report["activations_at_backward"],
    }
    if name == "lstm":  # what the estimate cannot count is named (checked before the xfail's assertion)
        assert any(note["kind"] == "kernel workspace" for note in report["unaccounted"]), report["unaccounted"]
    errors = {key: abs(predicted[key] - exact[key]) / exact[key] for key in predicted}
    print(name, {k: (predicted[k], exact[k], f"{errors[k]:.2%}") for k in predicted})
    assert all(error <= TOLERANCE for error in errors.values()), (predicted, exact, errors)
    assert report["batch_size"] == BATCH[name]
    assert report["flops"] > 0 and report["step_time_s"] > 0
