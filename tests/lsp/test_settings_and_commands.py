"""Settings (editor + pyproject), executeCommand handlers and a clean shutdown, over LSP."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

from editor_dap import stop_under_debugpy
import pytest
from lsp_helpers import CONFIG, FIXTURES, start_session
from lsprotocol import types as lsp

FIXTURE = (FIXTURES / "train_buggy.py").read_text(encoding="utf-8")


def _codes(diagnostics) -> set[str]:
    return {str(d.code) for d in diagnostics}


def _settings_changed(client, settings: dict, push_model: bool = False) -> None:
    client.set_configuration({"lintDelay": 0, **settings}, section="traindoctor")
    payload = {"traindoctor": {"lintDelay": 0, **settings}} if push_model else None
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=payload))


async def test_configuration_changes_relint_open_documents(client, workspace: Path):
    uri = client.open(workspace / "train.py")
    assert "TRN101" in _codes(await client.current_diagnostics(uri))

    _settings_changed(client, {"ignore": ["TRN101"]})
    assert "TRN101" not in _codes(await client.eventually(uri, lambda ds: "TRN101" not in _codes(ds)))

    _settings_changed(client, {"severity": {"TRN101": "error"}}, push_model=True)
    diagnostics = await client.eventually(uri, lambda ds: "TRN101" in _codes(ds))
    [trn101] = [d for d in diagnostics if d.code == "TRN101"]
    assert trn101.severity == lsp.DiagnosticSeverity.Error

    _settings_changed(client, {"select": ["TRN1"]})
    assert _codes(await client.eventually(uri, lambda ds: _codes(ds) == {"TRN101"})) == {"TRN101"}


async def test_bad_settings_are_reported_and_the_rest_still_applies(client, workspace: Path):
    uri = client.open(workspace / "train.py")
    await client.current_diagnostics(uri)
    _settings_changed(client, {"ignore": "TRN101", "lintDelay": "fast", "severity": {"TRN201": "loud"}})
    await client.eventually(uri, lambda ds: "TRN101" not in _codes(ds))
    for _ in range(100):
        if len(client.messages) >= 2:
            break
        await asyncio.sleep(0.05)
    text = "\n".join(m.message for m in client.messages)
    assert "lintDelay" in text and "loud" in text
    assert all(m.type == lsp.MessageType.Warning for m in client.messages)


async def test_pyproject_config_is_merged_with_editor_settings(client, workspace: Path):
    (workspace / "pyproject.toml").write_text(
        '[tool.traindoctor]\nignore = ["TRN202"]\n[tool.traindoctor.severity]\nTRN101 = "error"\n', encoding="utf-8"
    )
    uri = client.open(workspace / "train.py")
    diagnostics = await client.current_diagnostics(uri)
    assert "TRN202" not in _codes(diagnostics)
    [trn101] = [d for d in diagnostics if d.code == "TRN101"]
    assert trn101.severity == lsp.DiagnosticSeverity.Error
    _settings_changed(client, {"severity": {"TRN101": "hint"}})  # the editor overrides the file
    diagnostics = await client.eventually(
        uri, lambda ds: any(d.code == "TRN101" and d.severity == lsp.DiagnosticSeverity.Hint for d in ds)
    )
    assert "TRN202" not in _codes(diagnostics)


async def test_lint_on_change_off_lints_on_save_only(client, workspace: Path):
    uri = client.open(workspace / "train.py")
    [trn101] = [d for d in await client.current_diagnostics(uri) if d.code == "TRN101"]
    _settings_changed(client, {"lintOnChange": False})
    await asyncio.sleep(0.5)  # let the server take the new settings
    published = len(client.published)
    end = trn101.range.end
    client.edit(uri, lsp.Range(end, end), ".item()")
    await asyncio.sleep(0.5)
    if client.pulls:
        assert "TRN101" in _codes(await client.current_diagnostics(uri)), "not re-linted while typing"
    else:
        assert not [p for p in client.published[published:] if p.uri == uri and p.version == client.versions[uri]]
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
    assert "TRN101" not in _codes(await client.eventually(uri, lambda ds: "TRN101" not in _codes(ds)))


CRASH = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn

    model = nn.Linear(8, 4)
    criterion = nn.MSELoss()
    total_loss = 0
    for step in range(2):
        loss = criterion(model(torch.randn(2, 8)), torch.zeros(2, 4))
        loss.backward()
        total_loss += loss
        features = torch.randn(2, 5)
        model(features)
    """
)


def _real_traceback(workspace: Path) -> str:
    (workspace / "crash.py").write_text(CRASH, encoding="utf-8")
    run = subprocess.run([sys.executable, "crash.py"], cwd=workspace, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "Traceback" in run.stderr, run.stderr
    return run.stderr


@pytest.mark.slow
async def test_diagnose_traceback_publishes_on_the_user_frame_next_to_lint(client, workspace: Path):
    diagnose = pytest.importorskip("traindoctor.diagnose")
    if not hasattr(diagnose, "diagnose_text"):
        pytest.skip("traceback diagnosis not built yet")
    traceback = _real_traceback(workspace)
    uri = client.open(workspace / "crash.py")
    assert "TRN101" in _codes(await client.current_diagnostics(uri))

    result = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="traindoctor.diagnoseTraceback", arguments=[traceback])
    )
    assert isinstance(result, dict) and result["title"]
    crash_line = CRASH.splitlines().index("    model(features)")

    def has_diagnosis(ds) -> bool:
        return any(d.range.start.line == crash_line and d.message.startswith(result["title"]) for d in ds)

    diagnostics = await client.eventually(uri, has_diagnosis)
    assert "TRN101" in _codes(diagnostics), "the diagnosis is merged with the lint results, not instead of them"
    [diagnosis] = [d for d in diagnostics if d.range.start.line == crash_line]
    assert diagnosis.source == "traindoctor" and diagnosis.severity == lsp.DiagnosticSeverity.Error

    await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command="traindoctor.clearDiagnosis"))
    diagnostics = await client.eventually(uri, lambda ds: not has_diagnosis(ds))
    assert "TRN101" in _codes(diagnostics)

    # Object form of the argument; then an edit of the file retires the diagnosis.
    await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="traindoctor.diagnoseTraceback", arguments=[{"text": traceback}])
    )
    await client.eventually(uri, has_diagnosis)
    client.edit(uri, lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), "# edited\n")
    crash_line += 1
    diagnostics = await client.current_diagnostics(uri)
    assert not has_diagnosis(diagnostics) and "TRN101" in _codes(diagnostics)


async def test_commands_with_bad_arguments_answer_with_an_error(client):
    for command, arguments in [
        ("traindoctor.diagnoseTraceback", []),
        ("traindoctor.diagnoseTraceback", [42]),
        ("traindoctor.diagnoseLive", ["not an object"]),
    ]:
        with pytest.raises(Exception) as error:
            await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command=command, arguments=arguments))
        assert "expects" in str(error.value), str(error.value)
    # ...and the server is still fine.
    assert isinstance(
        await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command="traindoctor.probeExpressions")),
        list,
    )


async def test_probe_expressions(client):
    pytest.importorskip("traindoctor.live.probes")
    probes = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="traindoctor.probeExpressions")
    )
    assert probes and all(isinstance(p["name"], str) and isinstance(p["expression"], str) for p in probes)


async def test_debugger_rules_exclude_our_frames(client):
    rules = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command="traindoctor.debuggerRules"))
    assert rules and all(rule["include"] is False and isinstance(rule["path"], str) for rule in rules)
    assert "**/traindoctor/monitor/bootstrap.py" in [rule["path"] for rule in rules]


async def test_user_frame_names_the_frame_to_probe_and_the_paused_one(client, workspace: Path):
    # debugpy's answer without justMyCode: paused in torch's frame, which holds the exception.
    torch_file = "/venv/lib/python3.11/site-packages/torch/_tensor.py"
    frames = [{"id": 7, "name": "backward", "line": 623, "source": {"path": torch_file}, "presentationHint": "subtle"},
              {"id": 8, "name": "train", "line": 9, "source": {"path": str(workspace / "train.py")}},
              {"id": 9, "name": "<module>", "line": 12, "source": {"path": str(workspace / "train.py")}}]
    chosen = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="traindoctor.userFrame", arguments=[{"stackTrace": {"stackFrames": frames}}]))
    assert chosen == {"frameId": 8, "currentFrameId": 7}


async def test_lint_workspace_reports_progress_and_publishes_closed_files(client, workspace: Path):
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "model.py").write_text("import torch\n\nlayer = torch.nn.Linear(2, 2)\n", encoding="utf-8")
    for skipped in (".venv/lib/site.py", "node_modules/x/y.py", ".git/hooks/h.py", "env/lib/z.py"):
        (workspace / skipped).parent.mkdir(parents=True, exist_ok=True)
        (workspace / skipped).write_text(FIXTURE, encoding="utf-8")
    (workspace / "env" / "pyvenv.cfg").write_text("home = /usr\n", encoding="utf-8")

    result = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="traindoctor.lintWorkspace")
    )
    assert result["files"] == 2 and not result["cancelled"], result
    assert result["findings"] >= 4  # the fixture's bugs
    train = (workspace / "train.py").as_uri()
    assert "TRN101" in _codes(client.diagnostics_pushed(train))
    published = {p.uri for p in client.published}
    assert not any("/.venv/" in u or "node_modules" in u or "/.git/" in u or "/env/" in u for u in published)

    # (the workspace index reports its own progress under another token)
    [reports] = [r for token, r in client.progress_reports.items() if str(token).startswith("traindoctor-lint-")]
    kinds = [r.kind for r in reports]
    assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds
    assert reports[0].cancellable is True


async def test_shutdown_and_exit_are_clean(workspace: Path):
    client = await CONFIG.start()
    try:
        await start_session(client, "visual-studio-code", workspace)
        uri = client.open(workspace / "train.py")
        assert await client.current_diagnostics(uri)
        await asyncio.wait_for(client.shutdown_session(), 20)
        assert client._server.returncode == 0
    finally:
        await _stop(client)


async def _refreshes_settled(client, quiet: float = 1.5, limit: float = 20.0) -> int:
    """The client's refresh count once none has come for `quiet` seconds (a loaded machine
    delays the server's refresh for the settings it fetched at start-up)."""
    loop = asyncio.get_running_loop()
    count, since, deadline = client.diagnostic_refresh_count, loop.time(), loop.time() + limit
    while loop.time() - since < quiet and loop.time() < deadline:
        await asyncio.sleep(0.05)
        if client.diagnostic_refresh_count != count:
            count, since = client.diagnostic_refresh_count, loop.time()
    return count


async def _stop(client) -> None:
    """Stop a client started by hand; a server left running by a failed test is killed."""
    if client._server is not None and client._server.returncode is None:
        client._server.kill()
    await client.stop()


async def test_pyproject_edited_on_disk_applies_to_open_documents(client, workspace: Path):
    uri = client.open(workspace / "train.py")
    assert "TRN101" in _codes(await client.current_diagnostics(uri))
    pyproject = workspace / "pyproject.toml"
    pyproject.write_text('[tool.traindoctor]\nignore = ["TRN101"]\n', encoding="utf-8")
    watching = [r for r in client.registrations if r.method == lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES]
    caps = client.capabilities.workspace.did_change_watched_files
    assert bool(watching) == bool(caps and caps.dynamic_registration)
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(changes=[lsp.FileEvent(uri=pyproject.as_uri(), type=lsp.FileChangeType.Created)])
    )
    assert "TRN101" not in _codes(await client.eventually(uri, lambda ds: "TRN101" not in _codes(ds)))


async def test_lint_workspace_can_be_cancelled_from_the_progress_ui(client, workspace: Path):
    for index in range(40):
        (workspace / f"copy_{index:02d}.py").write_text(FIXTURE, encoding="utf-8")
    run = asyncio.ensure_future(
        client.workspace_execute_command_async(lsp.ExecuteCommandParams(command="traindoctor.lintWorkspace"))
    )
    for _ in range(400):
        reports = next((r for t, r in client.progress_reports.items() if str(t).startswith("traindoctor-lint-")), [])
        if any(r.kind == "report" for r in reports):
            break
        await asyncio.sleep(0.025)
    [token] = [t for t in client.progress_reports if str(t).startswith("traindoctor-lint-")]
    client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=token))
    result = await asyncio.wait_for(run, 60)
    assert result["cancelled"] is True and result["files"] < 41, result
    assert client.progress_reports[token][-1].kind == "end"


async def test_pull_client_is_asked_to_refresh_after_server_side_changes_only(workspace: Path):
    from pytest_lsp import client_capabilities

    caps = client_capabilities("neovim")
    caps.workspace.diagnostics = lsp.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    client = await CONFIG.start()
    try:
        client.set_configuration({"lintDelay": 0}, section="traindoctor")
        result = await client.initialize_session(
            lsp.InitializeParams(capabilities=caps, workspace_folders=[lsp.WorkspaceFolder(workspace.as_uri(), "ws")])
        )
        client.encoding = str(result.capabilities.position_encoding)
        uri = client.open(workspace / "train.py")
        assert "TRN101" in _codes(await client.current_diagnostics(uri))
        # Settings that arrive after the open count as a server-side change: wait for that refresh.
        settled = await _refreshes_settled(client)
        client.edit(uri, lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), "# typed\n")
        await client.current_diagnostics(uri)
        await asyncio.sleep(0.3)
        assert client.diagnostic_refresh_count == settled, "the client pulls after its own edits"
        _settings_changed(client, {"ignore": ["TRN101"]})
        for _ in range(200):
            if client.diagnostic_refresh_count > settled:
                break
            await asyncio.sleep(0.05)
        assert client.diagnostic_refresh_count > settled
        assert "TRN101" not in _codes(await client.current_diagnostics(uri))
        await asyncio.wait_for(client.shutdown_session(), 20)
    finally:
        await _stop(client)


@pytest.mark.slow
async def test_diagnose_live_with_a_real_debugpy_stop(client, workspace: Path):
    pytest.importorskip("traindoctor.live.from_dap")
    script = workspace / "crash.py"
    script.write_text(CRASH, encoding="utf-8")
    payload, _pid = await asyncio.to_thread(stop_under_debugpy, script)
    result = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="traindoctor.diagnoseLive", arguments=[payload])
    )
    assert result["kind"] == "shape-mismatch", result["kind"]
    crash_line = CRASH.splitlines().index("    model(features)")
    # crash.py is not open in the editor: the diagnosis is pushed to it, whatever the client.
    diagnostics = await client.wait_for_publish(script.as_uri(), lambda p: bool(p.diagnostics))
    [diagnosis] = diagnostics
    assert diagnosis.range.start.line == crash_line and diagnosis.message.startswith(result["title"])
