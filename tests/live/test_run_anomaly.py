"""`traindoctor run --anomaly[=auto]`: autograd anomaly detection switched on by traindoctor
(the script unchanged) gives the forward line of an in-place error or of a NaN from backward.
Real torch, real debugpy."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import uuid
from pathlib import Path

import pytest

from live_helpers import PYTHON, SCRIPTS, Outcome, env
from reliability.reliability_helpers import kill_quietly, wait_until_gone
from traindoctor.live import anomaly

pytestmark = pytest.mark.slow

INPLACE = str(SCRIPTS / "inplace_in_forward.py")
MODEL = SCRIPTS / "inplace_model.py"


def _run(tmp_path: Path, *options: str, script: str = INPLACE) -> Outcome:
    """`traindoctor run OPTIONS -- python SCRIPT`, checking that no process and no trace folder is left."""
    marker = uuid.uuid4().hex
    environment = env()
    environment.update(TD_RELIABILITY_MARKER=marker, TMPDIR=str(tmp_path))
    done = subprocess.run([PYTHON, "-m", "traindoctor", "run", *options, "--", PYTHON, script],
                          capture_output=True, text=True, timeout=120, env=environment)
    left = wait_until_gone(marker)
    kill_quietly(left)
    assert left == [], f"processes left behind: {left}"
    assert not list(tmp_path.glob("traindoctor-anomaly-*")), "the folder of forward traces was not removed"
    return Outcome(done.returncode, done.stdout, done.stderr)


def _facts(diagnosis: dict) -> dict:
    return diagnosis["details"]["facts"]


def test_without_the_flag_the_rerun_command_is_offered(tmp_path):
    outcome = _run(tmp_path, "--format", "json")
    diagnosis = outcome.diagnosis
    assert diagnosis["kind"] == "inplace-modification"
    # The forward ran in another file, not on the failing stack: statically unknown.
    assert "forward_site" not in _facts(diagnosis) and "inplace_site" not in _facts(diagnosis)
    offer = outcome.payload["anomaly_rerun"]
    assert offer["command"] == shlex.join(["traindoctor", "run", "--anomaly", "--format", "json", "--",
                                           PYTHON, INPLACE])
    assert "Error detected in" not in outcome.stderr  # anomaly mode was off: the command ran once, as is
    assert outcome.code == 1


def test_the_offer_in_text_output(tmp_path):
    outcome = _run(tmp_path)
    assert f"traindoctor run --anomaly -- {shlex.join([PYTHON, INPLACE])}" in outcome.stderr
    assert outcome.code == 1


def test_anomaly_mode_names_the_forward_line_and_the_inplace_operation(tmp_path):
    outcome = _run(tmp_path, "--format", "json", "--anomaly")
    diagnosis = outcome.diagnosis
    facts = _facts(diagnosis)
    assert diagnosis["kind"] == "inplace-modification"
    assert facts["forward_site"] == f"{MODEL}:12"
    evidence = "\n".join(diagnosis["evidence"])
    assert f"the forward call that created it is {MODEL}:12: h = torch.sigmoid(self.linear(x))" in evidence
    # With the forward's file known, the in-place op is found in it and confirmed by anomaly mode.
    assert facts["inplace_site"] == f"{MODEL}:13" and facts["inplace_code"] == "h += 1.0"
    assert "the forward call anomaly mode names" in evidence
    assert diagnosis["fixes"][0]["title"] == f"Make `h += 1.0` out of place ({MODEL}:13)"
    assert "anomaly_rerun" not in outcome.payload
    # The user still sees torch's own warning, as when they switch anomaly mode on themselves.
    assert "Error detected in SigmoidBackward0" in outcome.stderr
    assert outcome.code == 1


def test_auto_runs_the_command_once_more_only_on_such_an_error(tmp_path):
    outcome = _run(tmp_path, "--anomaly=auto")
    assert "running the command once more with anomaly detection on" in outcome.stderr
    ran = [line for line in outcome.stderr.splitlines() if line.startswith("RuntimeError: one of the variables")]
    assert len(ran) == 2  # the traceback each run of the script printed
    assert outcome.stderr.count("Error detected in SigmoidBackward0") == 1  # only the second run
    assert f"the forward call that created it is {MODEL}:12" in outcome.stderr
    assert outcome.code == 1

    healthy = _run(tmp_path, "--anomaly=auto", script=str(SCRIPTS / "trains_ok.py"))
    assert "once more" not in healthy.stderr and healthy.code == 0


def test_auto_in_json_keeps_the_first_diagnosis(tmp_path):
    outcome = _run(tmp_path, "--format", "json", "--anomaly=auto")
    payload = outcome.payload
    rerun = payload["anomaly_rerun"]
    assert rerun["rerun"] is True and rerun["exit_code"] == 1
    assert "inplace_site" not in rerun["first_diagnosis"]["details"]["facts"]
    assert payload["diagnosis"]["details"]["facts"]["inplace_site"] == f"{MODEL}:13"
    assert payload["exit_code"] == 1


def test_nan_from_backward_moves_to_the_forward_line(tmp_path):
    script = str(SCRIPTS / "nan_anomaly.py")  # the script enables anomaly mode itself
    offered = _run(tmp_path, "--format", "json", script=script)
    assert offered.diagnosis["location"]["line"] == 11  # loss.backward(): torch's warning went to stderr only
    assert offered.payload["anomaly_rerun"]["offered"] is True

    diagnosis = _run(tmp_path, "--format", "json", "--anomaly", script=script).diagnosis
    assert diagnosis["kind"] == "nan-inf"
    assert (diagnosis["location"]["line"], diagnosis["location"]["code"]) == (9, "root = torch.sqrt(shifted)")


def test_the_sitecustomize_keeps_the_users_path_and_sitecustomize(tmp_path):
    """No debugger: the sitecustomize alone, in a plain interpreter."""
    user_site = tmp_path / "user_site"
    user_site.mkdir()
    (user_site / "sitecustomize.py").write_text("import os\nos.environ['USER_SITECUSTOMIZE_RAN'] = '1'\n")
    (user_site / "helper_module.py").write_text("VALUE = 42\n")
    traces = tmp_path / "traces"
    traces.mkdir()
    environment = anomaly.setup(str(traces), {**env(), "PYTHONPATH": str(user_site)}, check_nan=False)
    probe = ("import json, os, sys\n"
             "torch_before = 'torch' in sys.modules\n"
             "import helper_module, torch\n"
             "print(json.dumps([torch_before, os.environ.get('USER_SITECUSTOMIZE_RAN'), helper_module.VALUE,\n"
             "                  torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()]))\n")
    done = subprocess.run([PYTHON, "-c", probe], capture_output=True, text=True, timeout=120, env=environment)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [False, "1", 42, True, False]
    assert os.listdir(traces) == ["sitecustomize.py"]  # nothing failed: no forward trace recorded


def test_the_forward_trace_is_recorded_even_where_the_script_silences_warnings(tmp_path):
    """No debugger: a script that silences every warning still leaves torch's forward trace."""
    script = tmp_path / "silenced.py"
    script.write_text("import warnings\nimport torch\nwarnings.filterwarnings('ignore')\n"
                      "warnings.simplefilter('error')\n\n"
                      "def step(x):\n    h = torch.sigmoid(x)\n    h += 1.0\n    h.sum().backward()\n\n"
                      "step(torch.randn(3, requires_grad=True))\n")
    traces = tmp_path / "traces"
    traces.mkdir()
    environment = anomaly.setup(str(traces), env(), check_nan=False)
    done = subprocess.run([PYTHON, str(script)], capture_output=True, text=True, timeout=120, env=environment)
    assert "modified by an inplace operation" in done.stderr
    [recorded] = [name for name in os.listdir(traces) if name.endswith(".txt")]
    trace = anomaly.forward_trace(str(traces), int(recorded[:-4]))
    assert "Error detected in SigmoidBackward0" in trace
    assert f'File "{script}", line 7, in step\n    h = torch.sigmoid(x)' in trace
