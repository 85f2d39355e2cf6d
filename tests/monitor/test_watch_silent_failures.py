"""Runs that fail without crashing, seen by `watch` from what the process really does (issue 28):
gradients carried from one optimizer step to the next (no zero_grad), an optimizer that holds
the parameters of a model the loop no longer uses, mixed precision whose GradScaler skips every
step, and a classifier whose loss stays at the entropy of its labels. Real scripts under the real
monitor."""

from __future__ import annotations

import json

import pytest
import torch

from traindoctor.monitor.bootstrap import _load_hooks

from monitor_helpers import PYTHON, SCRIPTS, monitored, traindoctor

hooks = _load_hooks()


def _probe_verdicts(reset) -> list:
    """The carry probe's verdicts over 4 steps of a tiny loop whose reset is `reset(optimizer)`."""
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    probe, verdicts = hooks._GradientCarryProbe(), []
    for step in range(5):
        reset(optimizer)
        model(torch.randn(4, 3)).pow(2).mean().backward()
        if step:
            verdicts.append(probe.check())
        optimizer.step()
        probe.start(list(model.parameters()))
    probe.stop()
    return verdicts


def test_the_probe_tells_a_carried_gradient_from_a_reset_one() -> None:
    assert _probe_verdicts(lambda optimizer: None) == [True] * 4
    assert _probe_verdicts(lambda optimizer: optimizer.zero_grad()) == [False] * 4
    assert _probe_verdicts(lambda optimizer: optimizer.zero_grad(set_to_none=False)) == [False] * 4


@pytest.mark.slow
def test_watch_names_gradients_that_are_never_reset(tmp_path) -> None:
    outcome = monitored("watch", "no_zero_grad.py", cwd=tmp_path)
    finding = outcome.finding("gradients-not-reset")
    assert finding["step"] == 2 and finding["location"]["code"] == "loss.backward()"
    assert finding["fixes"][0]["title"] == "Zero the gradients once per optimizer step"
    [lint] = finding["related_findings"]
    assert lint["code"] == "TRN701"
    # what it causes is explained by it, not by the learning rate (0.01 is fine once gradients are reset)
    for kind in ("divergence", "loss-spike"):
        for other in [f for f in outcome.payload["findings"] if f["kind"] == kind]:
            assert "never reset" in other["root_cause"] and "Lower the learning rate" not in \
                [f["title"] for f in other["fixes"]], other
    # the lint quick fix it links, applied and run: the gradients are reset and the finding goes
    [edit] = lint["fix"]["edits"]
    assert (edit["line"], edit["column"]) == (edit["end_line"], edit["end_column"])  # an insertion
    lines = (SCRIPTS / "no_zero_grad.py").read_text().splitlines(keepends=True)
    lines.insert(edit["line"] - 1, edit["new_text"])
    fixed = tmp_path / "no_zero_grad_fixed.py"
    fixed.write_text("".join(lines))
    after = traindoctor("watch", "--format", "json", "--", PYTHON, str(fixed), cwd=tmp_path)
    assert after.code == 0 and "gradients-not-reset" not in [f["kind"] for f in after.payload["findings"]]


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["zero-not-none", "accumulate-4", "gan", "grad-none-by-hand"])
def test_loops_that_reset_their_gradients_are_not_reported(tmp_path, variant) -> None:
    outcome = monitored("watch", "gradient_resets.py", script_args=(variant,), cwd=tmp_path)
    assert outcome.code == 0, outcome.stderr
    assert "gradients-not-reset" not in [f["kind"] for f in outcome.payload["findings"]]


@pytest.mark.slow
def test_watch_names_an_optimizer_built_for_a_model_the_loop_no_longer_uses(tmp_path) -> None:
    finding = monitored("watch", "optimizer_of_old_model.py", cwd=tmp_path).finding("no-learning")
    assert finding["title"] == "The model does not learn: the optimizer holds none of the 4 trainable tensors the loss uses"
    assert finding["fixes"][0]["title"] == "Create the optimizer from the model you train"


@pytest.mark.slow
def test_watch_reports_mixed_precision_that_skips_every_step(tmp_path) -> None:
    outcome = monitored("watch", "amp_every_step_skipped.py", cwd=tmp_path)
    finding = outcome.finding("amp-skipped-steps")
    assert finding["title"].startswith("Mixed precision skipped 98 optimizer steps (98 in a row), the first after step 30")
    assert "non-finite loss already" in finding["root_cause"]
    assert finding["location"]["code"] == "scaler.scale(loss).backward()"


@pytest.mark.slow
def test_the_loss_scale_warm_up_of_mixed_precision_is_not_reported(tmp_path) -> None:
    outcome = monitored("watch", "amp_scale_warmup.py", cwd=tmp_path)
    assert outcome.payload["exit_code"] == 0, outcome.stderr
    assert "amp-skipped-steps" not in [f["kind"] for f in outcome.payload["findings"]]
    # the control: the scaler did skip its first steps, and the monitor counted them
    [run_dir] = (tmp_path / ".traindoctor" / "runs").iterdir()
    skips = json.loads((run_dir / "run.json").read_text())["amp_skips"]
    assert 2 <= skips["count"] < 20 and skips["nonfinite_losses"] == 0


@pytest.mark.slow
def test_watch_names_a_classifier_stuck_at_the_chance_level_of_its_labels(tmp_path) -> None:
    finding = monitored("watch", "labels_apart_from_inputs.py", cwd=tmp_path).finding("no-progress")
    assert "the chance level of its 2 classes" in finding["title"]
    assert finding["fixes"][1]["title"] == "Check that inputs and labels stay together"


@pytest.mark.slow
def test_a_classifier_that_learns_is_not_at_chance(tmp_path) -> None:
    script = (SCRIPTS / "labels_apart_from_inputs.py").read_text()
    aligned = tmp_path / "labels_with_inputs.py"
    aligned.write_text(script.replace("y = y[torch.randperm(len(y))]", "y = y"))
    outcome = traindoctor("watch", "--format", "json", "--", PYTHON, str(aligned), cwd=tmp_path)
    assert "no-progress" not in [f["kind"] for f in outcome.payload["findings"]], outcome.stdout


@pytest.mark.slow
def test_watch_says_the_learning_rate_is_too_small_when_gradients_flow_but_weights_stay(tmp_path) -> None:
    finding = monitored("watch", "lr_too_small.py", cwd=tmp_path).finding("no-learning")
    assert finding["title"].startswith("The model does not learn: the learning rate 1e-07 is too small")
    assert finding["fixes"][0]["title"] == "Raise the learning rate"
