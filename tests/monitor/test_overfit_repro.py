"""`traindoctor overfit` and `traindoctor repro` on real scripts."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor_helpers import PYTHON, SCRIPTS, monitored, traindoctor

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("overfit")


def test_a_healthy_model_fits_one_batch(workdir):
    outcome = monitored("overfit", "fit.py", "--steps", "60", script_args=("healthy",), cwd=workdir)
    payload = outcome.payload
    assert payload["command"] == "overfit" and payload["verdict"] == "fits", outcome.stderr
    assert payload["findings"] == []
    assert payload["loss_last"] < 0.05 * payload["loss_first"]
    assert 1 < payload["fit_step"] <= 60 and payload["steps"] == 60
    assert outcome.code == 0


def test_a_loss_on_detached_features_does_not_fit_and_says_why(workdir):
    outcome = monitored("overfit", "fit.py", "--steps", "60", "--record", str(workdir / "records"),
                        script_args=("detached",), cwd=workdir)
    payload = outcome.payload
    assert payload["verdict"] == "does-not-fit"
    finding = outcome.finding("does-not-fit")
    facts = finding["details"]["facts"]
    assert facts["never_count"] == 4 and "Sequential.0.weight" in facts["never"]
    # the finding is at the line that cuts the gradient, not at optimizer.step()
    assert (Path(finding["location"]["path"]).name, finding["location"]["line"]) == ("fit.py", 21)
    assert finding["location"]["code"] == "features = features.detach()"
    assert finding["title"].endswith("cuts the graph")
    assert finding["details"]["suspects"][0].startswith("the `.detach()` at ")
    assert list((workdir / "records").glob("*-does-not-fit.md"))
    assert outcome.code == 1


def test_a_zero_learning_rate_does_not_fit_and_says_why(workdir):
    outcome = monitored("overfit", "fit.py", "--steps", "30", script_args=("lr0",), cwd=workdir)
    assert outcome.payload["verdict"] == "does-not-fit"
    finding = outcome.finding("does-not-fit")
    assert finding["title"].endswith("most likely the learning rate is 0")
    assert finding["details"]["facts"]["lr_zero"] is True
    assert "Set a learning rate above 0" in [f["title"] for f in finding["fixes"]]


def test_unseeded_numpy_augmentation_differs_from_the_first_step(workdir):
    outcome = monitored("repro", "repro_numpy.py", "--steps", "8", cwd=workdir)
    payload = outcome.payload
    assert payload["command"] == "repro" and payload["verdict"] == "differs"
    assert payload["first_differing_step"] == 1
    finding = outcome.finding("not-reproducible")
    assert finding["step"] == 1 and finding["mode"] == "repro-failure"
    suspects = finding["details"]["suspects"]
    assert suspects[0] == "unseeded draws from NumPy's global RNG (np.random.*)"
    assert any(s.startswith("TRN202 at ") for s in suspects)
    assert [f["code"] for f in finding["related_findings"]] == ["TRN202"]
    assert outcome.code == 1


def test_repro_labels_its_two_runs_and_prints_each_finding_once(workdir):
    outcome = traindoctor("repro", "--steps", "4", "--timeout", "200", "--", PYTHON, str(SCRIPTS / "repro_numpy.py"),
                          cwd=workdir)
    assert outcome.code == 1
    lines = outcome.stderr.splitlines()
    first = lines.index("traindoctor repro: run 1/2, 4 steps:")
    second = lines.index("traindoctor repro: run 2/2 (torch.use_deterministic_algorithms(True, warn_only=True)), 4 steps:")
    assert first < second
    # TRN202's text once, with its finding; elsewhere only its code and line
    assert outcome.stderr.count("seeds only part of the program's randomness") == 1
    assert "static findings (below): TRN202 at line 5" in outcome.stderr


def test_a_fully_seeded_script_is_identical(workdir):
    outcome = monitored("repro", "repro_seeded.py", "--steps", "8", cwd=workdir)
    payload = outcome.payload
    assert payload["verdict"] == "identical", outcome.stderr
    assert payload["findings"] == [] and payload["steps"] == 8
    assert payload["checksums"][0] == payload["checksums"][1]
    assert outcome.code == 0
