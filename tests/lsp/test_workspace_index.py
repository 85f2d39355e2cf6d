"""The workspace's project index in the language server (issue 27): built in the background
with progress, never ahead of an open file's diagnostics, updated by edits, and re-linting
an open file only when a summary it reads changes. Real server, real pytest-lsp clients."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsp_helpers import CONFIG, start_session
from lsprotocol import types as lsp
from project_helpers import write_project

MODELS = """import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


def load_model(path):
    model = Net()
    model.load_state_dict(torch.load(path, weights_only=True))
    model.eval()
    return model
"""

EVALUATE = """import torch
from models import load_model


def evaluate(loader):
    model = load_model("net.pt")
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
    return correct
"""


PROJECT = {"models.py": MODELS, "evaluate.py": EVALUATE}


def _codes(diagnostics) -> list[str]:
    return [str(d.code) for d in diagnostics]


def _index_tokens(client) -> list[str]:
    return [t for t in client.progress_reports if str(t).startswith("traindoctor-index-")]


async def _index_built(client, limit: float = 60) -> list:
    deadline = asyncio.get_running_loop().time() + limit
    while asyncio.get_running_loop().time() < deadline:
        tokens = _index_tokens(client)
        if tokens and client.progress_reports[tokens[0]] and client.progress_reports[tokens[0]][-1].kind == "end":
            return client.progress_reports[tokens[0]]
        await asyncio.sleep(0.05)
    raise AssertionError(f"the index never finished: {client.progress_reports}")


async def test_the_index_reports_progress_and_its_facts_reach_the_open_file(client, workspace: Path):
    write_project(workspace, PROJECT)
    evaluate = client.open(workspace / "evaluate.py")
    reports = await _index_built(client)
    assert [r.kind for r in reports][0] == "begin" and reports[-1].kind == "end"
    # models.py was never opened: its summary came from the background build
    found = await client.eventually(evaluate, lambda ds: "TRN102" in _codes(ds))
    assert [d.range.start.line for d in found if str(d.code) == "TRN102"] == [8]


async def test_an_edit_in_one_file_changes_a_finding_published_for_another(client, workspace: Path):
    write_project(workspace, PROJECT)
    models = client.open(workspace / "models.py")
    evaluate = client.open(workspace / "evaluate.py")
    await _index_built(client)
    await client.eventually(evaluate, lambda ds: "TRN102" in _codes(ds))
    text = client.texts[models]
    line = text.splitlines().index("    model.eval()")
    client.edit(models, lsp.Range(lsp.Position(line, 0), lsp.Position(line + 1, 0)), "")
    await client.eventually(evaluate, lambda ds: "TRN102" not in _codes(ds))
    client.edit(models, lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0)), "    model.eval()\n")
    await client.eventually(evaluate, lambda ds: "TRN102" in _codes(ds))


ENGINE = """import torch


def train_one_epoch(model, loader, criterion, optimizer):
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""

MAIN = """import torch
import torch.nn as nn
from engine import train_one_epoch

model = nn.Sequential(nn.Linear(10, 3), nn.Softmax(dim=1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_one_epoch(model, [(torch.randn(4, 10), torch.randint(0, 3, (4,)))], nn.CrossEntropyLoss(), opt)
"""


async def test_an_edit_of_a_caller_changes_what_the_function_it_calls_is_told(client, workspace: Path):
    """The other direction: engine.py imports nothing of main.py, yet main.py's call decides what its
    parameters hold (a softmax model and a cross-entropy loss: TRN302 in engine.py)."""
    write_project(workspace, {"engine.py": ENGINE, "main.py": MAIN})
    main = client.open(workspace / "main.py")
    engine = client.open(workspace / "engine.py")
    await _index_built(client)
    found = await client.eventually(engine, lambda ds: "TRN302" in _codes(ds))
    assert [d.range.start.line for d in found if str(d.code) == "TRN302"] == [5]
    line = client.texts[main].splitlines().index("model = nn.Sequential(nn.Linear(10, 3), nn.Softmax(dim=1))")
    client.edit(main, lsp.Range(lsp.Position(line, 0), lsp.Position(line + 1, 0)), "model = nn.Linear(10, 3)\n")
    await client.eventually(engine, lambda ds: "TRN302" not in _codes(ds))


WRAPPER = """import torch.nn as nn


class DropoutWrapper(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p
"""

MATCHER = """import torch.nn as nn
from module.dropout_wrapper import DropoutWrapper


class Net(nn.Module):
    def __init__(self, ps):
        super().__init__()
        self.dropout_list = []
        for p in ps:
            self.dropout_list.append(DropoutWrapper(p))
"""


async def test_a_workspace_without_a_project_marker_imports_from_its_folder(client, workspace: Path):
    """No pyproject.toml, setup.py or .git: `module.dropout_wrapper` resolves from the workspace folder, as
    it does when the program runs from there, so the plain list holds modules of the project (TRN705)."""
    write_project(workspace, {"module/dropout_wrapper.py": WRAPPER, "mt_dnn/matcher.py": MATCHER}, pyproject=None)
    matcher = client.open(workspace / "mt_dnn" / "matcher.py")
    await _index_built(client)
    found = await client.eventually(matcher, lambda ds: "TRN705" in _codes(ds))
    assert [d.range.start.line for d in found if str(d.code) == "TRN705"] == [7]


def _changed_on_disk(client, path: Path, kind=lsp.FileChangeType.Changed) -> None:
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(changes=[lsp.FileEvent(uri=path.as_uri(), type=kind)]))


async def test_a_file_changed_on_disk_updates_the_findings_of_the_open_files(client, workspace: Path):
    write_project(workspace, PROJECT)
    evaluate = client.open(workspace / "evaluate.py")
    await _index_built(client)
    await client.eventually(evaluate, lambda ds: "TRN102" in _codes(ds))
    watching = [w["globPattern"] for r in client.registrations if r.method == lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES
                for w in r.register_options["watchers"]]
    caps = client.capabilities.workspace.did_change_watched_files
    assert ("**/*.py" in watching) == bool(caps and caps.dynamic_registration)
    # a `git checkout` rewrites models.py, which is not open: load_model no longer calls eval()
    models = workspace / "models.py"
    models.write_text(MODELS.replace("    model.eval()\n", ""))
    _changed_on_disk(client, models)
    await client.eventually(evaluate, lambda ds: "TRN102" not in _codes(ds))
    # deleted: nothing answers the import, and the rule no longer knows the model is in eval mode
    models.write_text(MODELS)
    _changed_on_disk(client, models)
    await client.eventually(evaluate, lambda ds: "TRN102" in _codes(ds))
    models.unlink()
    _changed_on_disk(client, models, lsp.FileChangeType.Deleted)
    await client.eventually(evaluate, lambda ds: "TRN102" not in _codes(ds))


async def test_closing_an_unsaved_buffer_puts_the_file_on_disk_back_in_the_index(client, workspace: Path):
    write_project(workspace, PROJECT)
    models = client.open(workspace / "models.py")
    evaluate = client.open(workspace / "evaluate.py")
    await _index_built(client)
    await client.eventually(evaluate, lambda ds: "TRN102" in _codes(ds))
    line = client.texts[models].splitlines().index("    model.eval()")
    client.edit(models, lsp.Range(lsp.Position(line, 0), lsp.Position(line + 1, 0)), "")
    await client.eventually(evaluate, lambda ds: "TRN102" not in _codes(ds))
    client.close(models)  # the edit is discarded: the file on disk still calls eval()
    await client.eventually(evaluate, lambda ds: "TRN102" in _codes(ds))


async def test_an_unchanged_summary_does_not_republish_its_dependants(workspace: Path):
    write_project(workspace, PROJECT)
    client = await CONFIG.start()
    try:
        await start_session(client, "visual-studio-code", workspace)
        models = client.open(workspace / "models.py")
        evaluate = client.open(workspace / "evaluate.py")
        await _index_built(client)
        await client.eventually(evaluate, lambda ds: "TRN102" in _codes(ds))
        # an edit that changes what models.py says re-publishes evaluate.py (the control) ...
        line = client.texts[models].splitlines().index("    model.eval()")
        before = len([e for e in client.events if e == ("publish", evaluate, "")])
        client.edit(models, lsp.Range(lsp.Position(line, 0), lsp.Position(line + 1, 0)), "")
        await client.eventually(evaluate, lambda ds: "TRN102" not in _codes(ds))
        assert len([e for e in client.events if e == ("publish", evaluate, "")]) > before
        # ... an edit that changes no summary (a comment, a layer's size) does not
        settled = len([e for e in client.events if e == ("publish", evaluate, "")])
        for version, new_text in enumerate(("# a comment\n", "# another comment\n")):
            client.edit(models, lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), new_text)
            await client.wait_for_publish(models, lambda p: p.version == client.versions[models])
        fc = client.texts[models].splitlines().index("        self.fc = nn.Linear(4, 2)")
        client.edit(models, lsp.Range(lsp.Position(fc, 22), lsp.Position(fc, 23)), "8")
        await client.wait_for_publish(models, lambda p: p.version == client.versions[models])
        # a round trip through the same pool: a re-lint of evaluate.py would have been queued before it
        other = client.open(workspace / "other.py", "import torch\nx = torch.zeros(1)\n")
        await client.wait_for_publish(other)
        assert len([e for e in client.events if e == ("publish", evaluate, "")]) == settled
        await asyncio.wait_for(client.shutdown_session(), 20)
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await client.stop()


async def test_the_open_file_is_diagnosed_while_a_big_index_is_still_building(workspace: Path):
    """~3,000 files: the open file's diagnostics come before the index's progress ends
    (an order of notifications, not a timing)."""
    write_project(workspace, PROJECT)
    for package in range(30):
        folder = workspace / f"pkg{package:02d}"
        folder.mkdir()
        (folder / "__init__.py").write_text("")
        for index in range(100):
            (folder / f"mod{index:03d}.py").write_text(
                f"import torch\n\n\ndef helper_{index}(x):\n    return torch.relu(x) * {index}\n")
    client = await CONFIG.start()
    try:
        await start_session(client, "visual-studio-code", workspace)
        evaluate = client.open(workspace / "evaluate.py")
        await client.wait_for_publish(evaluate)
        reports = await _index_built(client, limit=600)
        tokens = _index_tokens(client)
        assert reports[-1].message.startswith("30")  # 3,000 and more files
        order = [e for e in client.events if e[0] == "publish" and e[1] == evaluate or
                 e == ("progress", tokens[0], "end")]
        assert order[0] == ("publish", evaluate, ""), order[:3]
        # and once models.py is indexed, the open file is re-published with the fact it reads
        assert "TRN102" in _codes(await client.eventually(evaluate, lambda ds: "TRN102" in _codes(ds)))
        await asyncio.wait_for(client.shutdown_session(), 60)
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await client.stop()


async def test_index_workspace_false_builds_nothing(workspace: Path):
    write_project(workspace, PROJECT)
    client = await CONFIG.start()
    try:
        await start_session(client, "visual-studio-code", workspace, {"indexWorkspace": False})
        evaluate = client.open(workspace / "evaluate.py")
        assert "TRN102" not in _codes(await client.wait_for_publish(evaluate))
        other = client.open(workspace / "models.py")
        await client.wait_for_publish(other)
        assert _index_tokens(client) == []
        await asyncio.wait_for(client.shutdown_session(), 20)
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await client.stop()
