"""Ctrl-C at a terminal stops `traindoctor watch -- python train.py`: the watch and its training
process both get SIGINT (one process group); the watch exits 130 and leaves no process behind.
`--timeout` stops it too, and the report says it was stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from monitor_helpers import PYTHON, env

pytestmark = pytest.mark.slow

ENDLESS = """\
import os, sys
import torch
from torch import nn

model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
step = 0
while True:  # trains until interrupted
    x = torch.randn(8, 4)
    loss = (model(x) - 1).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    step += 1
    if step == 20:
        with open(sys.argv[1], "w") as marker:
            marker.write(str(os.getpid()))
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purpose: it runs nothing.
    status = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] if Path(f"/proc/{pid}").exists() else "X"
    return status != "Z"


@pytest.mark.parametrize("options", [(), ("--stop-on", "nan")], ids=["plain", "stop-on"])
def test_ctrl_c_stops_the_watch_and_its_training_process(tmp_path, options):
    script = tmp_path / "endless.py"
    script.write_text(ENDLESS)
    marker = tmp_path / "trained"
    # A session of its own: the signal goes to the whole group, as a terminal's Ctrl-C does.
    watch = subprocess.Popen([PYTHON, "-X", "faulthandler", "-m", "traindoctor", "watch", *options,
                              "--runs-dir", str(tmp_path / "runs"), "--", PYTHON, str(script), str(marker)],
                             cwd=tmp_path, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
            assert watch.poll() is None, watch.stderr.read().decode(errors="replace")
            time.sleep(0.2)
        trainer = int(marker.read_text())
        os.killpg(watch.pid, signal.SIGINT)
        try:
            code = watch.wait(60)  # a stop, not a speed
        except subprocess.TimeoutExpired:
            watch.send_signal(signal.SIGABRT)  # faulthandler prints where it waited
            watch.wait(30)
            pytest.fail("watch did not stop 60 s after SIGINT:\n" + watch.stderr.read().decode(errors="replace")[-6000:])
        assert code == 130, watch.stderr.read().decode(errors="replace")
        gone_by = time.monotonic() + 10
        while alive(trainer) and time.monotonic() < gone_by:
            time.sleep(0.1)
        assert not alive(trainer)
    finally:
        if watch.poll() is None:
            os.killpg(watch.pid, signal.SIGKILL)
            watch.wait()
        watch.stderr.close()


@pytest.mark.parametrize("options", [(), ("--stop-on", "nan")], ids=["plain", "stop-on"])
def test_timeout_stops_the_training_process_and_says_so(tmp_path, options):
    import json

    script = tmp_path / "endless.py"
    script.write_text(ENDLESS)
    marker = tmp_path / "trained"
    outcome = subprocess.run([PYTHON, "-m", "traindoctor", "watch", "--format", "json", "--timeout", "20", *options,
                              "--runs-dir", str(tmp_path / "runs"), "--", PYTHON, str(script), str(marker)],
                             cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=180)
    report = json.loads(outcome.stdout)
    assert report["timed_out"] is True, outcome.stderr
    assert "stopped at the timeout" in report["summary"]
    assert report["steps"] >= 20  # it trained before the stop
    trainer = int(marker.read_text())
    gone_by = time.monotonic() + 10
    while alive(trainer) and time.monotonic() < gone_by:
        time.sleep(0.1)
    assert not alive(trainer)
