"""The user's traceback, not ours (issue 28, point 6): frames of traindoctor's bootstrap and
hooks, debugpy/pydevd and runpy leave a diagnosis's frames; details["hidden_frames"] counts them,
and none of them is ever the user frame."""

from __future__ import annotations

from traindoctor.diagnose import diagnose_text

LOG = '''Traceback (most recent call last):
  File "/env/lib/python3.11/site-packages/traindoctor/monitor/bootstrap.py", line 80, in main
    target()
  File "/env/lib/python3.11/site-packages/traindoctor/monitor/bootstrap.py", line 63, in <lambda>
    target = lambda: runpy.run_path(script, run_name="__main__")
  File "<frozen runpy>", line 291, in run_path
  File "<frozen runpy>", line 98, in _run_module_code
  File "<frozen runpy>", line 88, in _run_code
  File "/home/me/proj/train.py", line 30, in <module>
    main()
  File "/home/me/proj/train.py", line 22, in main
    optimizer.step()
  File "<frozen traindoctor.monitor.hooks>", line 140, in _after_step
  File "/env/lib/python3.11/site-packages/torch/optim/optimizer.py", line 373, in wrapper
    out = func(*args, **kwargs)
RuntimeError: Function 'MulBackward0' returned nan values in its 0th output.
'''

DEBUGPY = '''Traceback (most recent call last):
  File "/home/me/.vscode/extensions/ms-python.debugpy-2024.0.0/bundled/libs/debugpy/_vendored/pydevd/pydevd.py", line 3489, in <module>
    main()
  File "/home/me/.vscode/extensions/ms-python.debugpy-2024.0.0/bundled/libs/debugpy/_vendored/pydevd/_pydevd_bundle/pydevd_runpy.py", line 124, in _run_code
    exec(code, run_globals)
  File "/home/me/proj/train.py", line 12, in <module>
    x = torch.zeros(3).cuda() + torch.zeros(3)
RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
'''


def test_bootstrap_runpy_and_hook_frames_are_hidden_and_counted() -> None:
    diagnosis = diagnose_text(LOG, correlate=False)
    paths = [f.path for f in diagnosis.frames]
    assert paths == ["/home/me/proj/train.py", "/home/me/proj/train.py",
                     "/env/lib/python3.11/site-packages/torch/optim/optimizer.py"]
    assert diagnosis.details["hidden_frames"] == 6
    assert diagnosis.location is not None and diagnosis.location.line == 22
    assert diagnosis.to_json()["details"]["hidden_frames"] == 6


def test_debugpy_frames_are_hidden() -> None:
    diagnosis = diagnose_text(DEBUGPY, correlate=False)
    assert diagnosis.kind == "device-mismatch"
    assert [f.path for f in diagnosis.frames] == ["/home/me/proj/train.py"]
    assert diagnosis.details["hidden_frames"] == 2


def test_a_traceback_without_them_is_unchanged() -> None:
    log = ('Traceback (most recent call last):\n  File "/home/me/proj/train.py", line 5, in <module>\n    f()\n'
           "ValueError: bad value\n")
    diagnosis = diagnose_text(log, correlate=False)
    assert len(diagnosis.frames) == 1 and "hidden_frames" not in diagnosis.details
