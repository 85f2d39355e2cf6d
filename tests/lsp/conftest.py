"""A real LSP client (pytest-lsp) against the real `traindoctor serve` process.

Every test runs once per recorded client: VS Code (push diagnostics, lazy code action
resolve, UTF-16), Neovim (pull diagnostics, UTF-8) and Emacs (UTF-32, no related
information). pytest-lsp's LspSpecificationWarning is an error in this folder: a
server that sends what a client did not ask for fails the test.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import CLIENTS, CONFIG, FIXTURES, EditorClient, start_session


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning"))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy(FIXTURES / "train_buggy.py", root / "train.py")
    return root


@pytest_lsp.fixture(params=CLIENTS, config=CONFIG)
async def client(lsp_client: EditorClient, request, workspace: Path):
    await start_session(lsp_client, request.param, workspace)
    yield
    await lsp_client.shutdown_session()
