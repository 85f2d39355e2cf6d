"""The user's traceback in the editor, not ours (issue 28, point 6): VS Code's Call Stack shows the
DAP `stackTrace` answer and its exception widget `exceptionInfo`'s `details.stackTrace`. With the
`rules` the extension adds to every traindoctor launch (internal_frames.debugger_rules), neither
holds a frame of traindoctor's bootstrap or hooks, runpy, debugpy or pydevd; the user's frames stay,
and torch's stay whenever `justMyCode` lets debugpy show libraries.

A real debugpy runs a real torch script that really fails, under the monitor's bootstrap as
"Watch this run" launches it (`program`: bootstrap.py, `args`: the script)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from editor_dap import debugpy_session, stop_at_uncaught_exception
from traindoctor.internal_frames import debugger_rules
from traindoctor.live.dap import DapConnection
from traindoctor.monitor.runner import BOOTSTRAP

# Spelled out here rather than taken from internal_frames.py, so that a gap in its definition fails.
OURS_OR_THE_DEBUGGER_S = ("debugpy", "pydevd", "runpy", "<frozen traindoctor", "traindoctor/monitor/",
                          "traindoctor/live/", "traindoctor/internal_frames")
FILE_LINE = re.compile(r'^\s*File "([^"]+)", line (\d+)', re.M)

SCRIPT = '''import torch
import torch.nn as nn


def step(model, x):
    return model(x)


model = nn.Sequential(nn.Linear(4, 3), nn.Linear(5, 2))
step(model, torch.randn(8, 4))
'''
USER_LINE = 6  # `return model(x)`: the user's innermost frame


def _internal(path: str) -> bool:
    return any(mark in path.replace("\\", "/") for mark in OURS_OR_THE_DEBUGGER_S)


def _stop_under_bootstrap(script: Path, attach: dict, read=None) -> tuple[dict, dict]:
    """`python -m debugpy ... bootstrap.py script.py` (the monitor's launch), attached with `attach`,
    stopped at the uncaught exception (VS Code's default exception filter): (stackTrace, exceptionInfo),
    and `read(connection, stackTrace)` called while it is stopped."""
    return _stop(script, [str(BOOTSTRAP), str(script)], attach, read,
                 {"TRAINDOCTOR_MONITOR": json.dumps({"run_dir": str(script.parent / "run")})})


def _stop(script: Path, target: list[str], attach: dict, read=None, env: dict | None = None) -> tuple[dict, dict]:
    with debugpy_session(target, script.parent, dict(OMP_NUM_THREADS="1", **(env or {}))) as (connection, _):
        thread = stop_at_uncaught_exception(connection, attach)
        stack = connection.request("stackTrace", {"threadId": thread})
        info = connection.request("exceptionInfo", {"threadId": thread})
        if read is not None:
            read(connection, stack)
        return stack, info


def _frames(stack: dict, info: dict) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(path, line) of the Call Stack's frames and of the exception widget's traceback."""
    call_stack = [(f.get("source", {}).get("path", ""), f["line"]) for f in stack["stackFrames"]]
    widget = [(path, int(line)) for path, line in FILE_LINE.findall(info["details"]["stackTrace"])]
    return call_stack, widget


@pytest.mark.parametrize("just_my_code", [False, True])
def test_the_call_stack_and_the_exception_widget_hold_no_internal_frame(tmp_path: Path, just_my_code: bool) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    stack, info = _stop_under_bootstrap(script, {"justMyCode": just_my_code, "rules": debugger_rules()})
    assert info["description"].startswith("mat1 and mat2 shapes cannot be multiplied")
    for frames in _frames(stack, info):
        assert not [path for path, _ in frames if _internal(path)], frames
        assert (str(script), USER_LINE) in frames, frames
        torch_frames = [path for path, _ in frames if "/torch/nn/modules/linear.py" in path.replace("\\", "/")]
        # debugpy's justMyCode hides libraries; without it torch's frames stay (the user needs them).
        assert bool(torch_frames) is not just_my_code, frames


def test_without_the_rules_the_bootstrap_shows(tmp_path: Path) -> None:
    """What the rules take away (so that the test above can fail): without `justMyCode` debugpy shows
    every frame outside its own files, the bootstrap that runs the user's script too."""
    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    stack, info = _stop_under_bootstrap(script, {"justMyCode": False})
    for frames in _frames(stack, info):
        assert [path for path, _ in frames if path.replace("\\", "/").endswith("traindoctor/monitor/bootstrap.py")], frames


def test_the_rules_match_what_internal_frames_hides_and_nothing_of_the_user_s() -> None:
    """debugpy's own matcher (pydevd's glob_matches_path, applied to pydevd's absolute path of a frame's
    file) against the paths `is_internal_path` hides: our files wherever installed, the hooks compiled
    as `<frozen traindoctor...>`, runpy as a file and frozen; and never a user's or torch's file."""
    import debugpy

    sys.path.insert(0, str(Path(debugpy.__file__).parent / "_vendored" / "pydevd"))
    try:
        import pydevd_file_utils
        from _pydevd_bundle.pydevd_filtering import glob_matches_path
    finally:
        sys.path.pop(0)
    from traindoctor.internal_frames import is_internal_path

    def excluded(path: str) -> bool:
        absolute = pydevd_file_utils.absolute_path(path)
        return any(glob_matches_path(absolute, rule["path"]) for rule in debugger_rules() if rule["include"] is False)

    ours = [str(BOOTSTRAP), "/opt/venv/lib/python3.12/site-packages/traindoctor/monitor/hooks.py",
            "/home/u/traindoctor/server/traindoctor/monitor/runner.py",
            "/opt/venv/lib/python3.12/site-packages/traindoctor/live/session.py",
            "/opt/venv/lib/python3.12/site-packages/traindoctor/internal_frames.py",
            "<frozen traindoctor.monitor.hooks>", "<frozen traindoctor.internal_frames>",
            "<frozen runpy>", "/usr/lib/python3.11/runpy.py"]
    theirs = ["/home/u/project/train.py", "/home/u/project/monitor/hooks.py",
              "/opt/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py", "<frozen importlib._bootstrap>",
              "/opt/venv/lib/python3.12/site-packages/traindoctor/diagnose/engine.py"]
    assert all(is_internal_path(path) for path in ours)
    assert [path for path in ours if not excluded(path)] == []
    assert [path for path in theirs if excluded(path)] == []


NAN_SCRIPT = '''import torch

torch.autograd.set_detect_anomaly(True)


def train():
    probs = torch.tensor([0.5, 0.5, 0.0], requires_grad=True)
    entropy = -(probs * torch.log(probs)).sum()
    entropy.backward()


train()
'''
BACKWARD_LINE = 9


def test_without_just_my_code_the_live_diagnosis_still_names_the_user_s_line(tmp_path: Path) -> None:
    """The extension's live diagnosis with its default `justMyCode: false`: debugpy pauses in torch's
    frame, which holds the exception, so the `traceback` probe is read there (the userFrame command's
    `currentFrameId`) and the others in the user's frame; the diagnosis then names the user's
    backward line, as under `justMyCode: true`. Read in the user's frame, the traceback probe finds
    no exception (what the extension did before)."""
    from traindoctor.diagnose.user_frame import dap_user_frame
    from traindoctor.live.from_dap import current_frame, diagnose_from_dap
    from traindoctor.live.probes import probe_expressions

    script = tmp_path / "train.py"
    script.write_text(NAN_SCRIPT, encoding="utf-8")
    read: dict = {}

    def probe(connection: DapConnection, stack: dict) -> None:
        def evaluate(expression: dict, frame: dict) -> dict:
            return connection.request("evaluate", {"expression": expression["expression"], "frameId": frame["id"],
                                                   "context": "watch"})

        user, paused = dap_user_frame(stack["stackFrames"], [tmp_path]), current_frame(stack)
        expressions = probe_expressions()
        read.update(user=user, paused=paused, probes={
            p["name"]: evaluate(p, paused if p["name"] == "traceback" else user) for p in expressions})
        read["traceback_in_user_frame"] = evaluate(next(p for p in expressions if p["name"] == "traceback"), user)

    stack, info = _stop(script, [str(script)], {"justMyCode": False, "rules": debugger_rules()}, probe)
    assert (read["user"]["source"]["path"], read["user"]["line"]) == (str(script), BACKWARD_LINE)
    assert "/torch/" in read["paused"]["source"]["path"].replace("\\", "/")
    assert read["traceback_in_user_frame"]["result"] == "'null'"
    diagnosis = diagnose_from_dap(info, stack, read["probes"], base_dir=tmp_path)
    assert diagnosis.location is not None
    assert (Path(diagnosis.location.path).name, diagnosis.location.line) == ("train.py", BACKWARD_LINE)
