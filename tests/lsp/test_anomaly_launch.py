"""A debug launch with autograd anomaly detection, as the editor makes it: the server answers the
environment (traindoctor.anomalyEnvironment), the editor starts the debuggee with it, and the live
stop's diagnosis names the forward line and the in-place operation. Real torch, real debugpy."""

from __future__ import annotations

import asyncio
import os
import textwrap
from pathlib import Path

from editor_dap import stop_under_debugpy
import pytest
from lsp_helpers import CONFIG, start_session
from lsprotocol import types as lsp

# The forward op runs in a helper that has returned when backward fails: no frame of the failing
# stack shows it, so only anomaly mode's forward trace names it.
SCRIPT = textwrap.dedent('''\
    import torch


    def gate(layer, x):
        h = torch.sigmoid(layer(x))  # sigmoid saves its output for backward
        h += 1.0  # ...which this in-place add changes
        return h


    def train_step(layer, x):
        out = gate(layer, x)
        out.sum().backward()


    torch.manual_seed(0)
    train_step(torch.nn.Linear(3, 3), torch.randn(4, 3))
''')
FORWARD_LINE = SCRIPT.splitlines().index("    h = torch.sigmoid(layer(x))  # sigmoid saves its output for backward") + 1
INPLACE_LINE = FORWARD_LINE + 1


@pytest.fixture
async def server(workspace: Path):
    client = await CONFIG.start()
    try:
        await start_session(client, "visual-studio-code", workspace)
        yield client
        await asyncio.wait_for(client.shutdown_session(), 20)
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await client.stop()


async def _command(client, command: str, *arguments):
    return await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command=command,
                                                                                 arguments=list(arguments)))


@pytest.mark.slow
async def test_a_relaunch_with_the_anomaly_environment_names_the_forward_line(server, workspace: Path):
    script = workspace / "train_inplace.py"
    script.write_text(SCRIPT, encoding="utf-8")

    payload, pid = await asyncio.to_thread(stop_under_debugpy, script)
    stop = {**payload, "pid": pid}
    first = await _command(server, "traindoctor.diagnoseLive", stop)
    assert first["kind"] == "inplace-modification"
    assert "forward_site" not in first["details"]["facts"]
    # An in-place error: the forward trace is wanted, not a NaN check (as `run --anomaly=auto`).
    assert first["details"]["anomaly_rerun"] == {"offered": True, "check_nan": False}

    launch = await _command(server, "traindoctor.anomalyEnvironment",
                            {"env": {"PYTHONPATH": str(workspace)}, "checkNan": False})
    directory = launch["directory"]
    assert set(launch["env"]) == {"PYTHONPATH", "TRAINDOCTOR_ANOMALY_DIR", "TRAINDOCTOR_ANOMALY_CHECK_NAN"}
    # The launch's own PYTHONPATH stays, after the folder of the sitecustomize.
    assert launch["env"]["PYTHONPATH"].split(os.pathsep)[:2] == [directory, str(workspace)]
    assert launch["env"]["TRAINDOCTOR_ANOMALY_CHECK_NAN"] == "0"

    payload, pid = await asyncio.to_thread(stop_under_debugpy, script, launch["env"])
    stop = {**payload, "pid": pid}
    second = await _command(server, "traindoctor.diagnoseLive", {**stop, "anomalyDir": directory})
    facts = second["details"]["facts"]
    assert second["kind"] == "inplace-modification"
    assert facts["forward_site"] == f"{script}:{FORWARD_LINE}"
    assert facts["inplace_site"] == f"{script}:{INPLACE_LINE}" and facts["inplace_code"] == "h += 1.0"
    assert any(f"the forward call that created it is {script}:{FORWARD_LINE}" in e for e in second["evidence"])
    assert "anomaly_rerun" not in second["details"]

    assert (await _command(server, "traindoctor.releaseAnomalyEnvironment", {"directory": directory})) == {
        "released": True}
    assert not Path(directory).exists()


async def test_only_folders_the_server_made_are_read_or_removed(server, tmp_path: Path):
    elsewhere = tmp_path / "not-ours"
    elsewhere.mkdir()
    (elsewhere / "1234.txt").write_text("Traceback of forward call that caused the error", encoding="utf-8")
    assert (await _command(server, "traindoctor.releaseAnomalyEnvironment", {"directory": str(elsewhere)})) == {
        "released": False}
    assert (elsewhere / "1234.txt").exists()


async def test_interpreter_options_that_skip_sitecustomize_are_refused(server):
    with pytest.raises(Exception, match="drop -I"):
        await _command(server, "traindoctor.anomalyEnvironment", {"pythonArgs": ["-I"]})


async def test_folders_left_are_removed_at_shutdown(workspace: Path):
    client = await CONFIG.start()
    try:
        await start_session(client, "visual-studio-code", workspace)
        launch = await _command(client, "traindoctor.anomalyEnvironment", {})
        assert Path(launch["directory"], "sitecustomize.py").is_file()
        await asyncio.wait_for(client.shutdown_session(), 20)
        assert not Path(launch["directory"]).exists()
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await client.stop()
