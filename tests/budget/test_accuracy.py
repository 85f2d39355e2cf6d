"""The budget's prediction against exact accounting of a real CPU step, for five real architectures.

Predicted (a fake step run by `traindoctor budget` on the unchanged script): parameters, gradients and
optimizer state, and the activations alive when backward starts. Exact: the same script's model in a
real CPU step, its tensors' sizes and the storages autograd saved (saved_tensors_hooks). Within 5 %.
"""

from __future__ import annotations

import pytest

from budget_helpers import PYTHON, SCRIPTS, budget, exact_step

pytestmark = pytest.mark.slow

BATCH = {"mlp": 16, "resnet18": 4, "gpt": 4, "unet": 4, "vit": 4}
TOLERANCE = 0.05


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("budget-accuracy")


@pytest.mark.parametrize("name", sorted(BATCH))
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
    errors = {key: abs(predicted[key] - exact[key]) / exact[key] for key in predicted}
    print(name, {k: (predicted[k], exact[k], f"{errors[k]:.2%}") for k in predicted})
    assert all(error <= TOLERANCE for error in errors.values()), (predicted, exact, errors)
    assert report["batch_size"] == BATCH[name]
    assert report["flops"] > 0 and report["step_time_s"] > 0
