"""What the feature modules (actions, commands, notebooks, workspace_index) use of the language
server. server.py builds the server and registers them; they type against this Protocol instead
of importing the server back, so the package has no import circle."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Protocol

from lsprotocol import types as lsp
from pygls.progress import Progress
from pygls.workspace import Workspace

from ..config import Config
from .anomaly_runs import AnomalyRuns
from .convert import ClientFeatures
from .documents import DocumentState, LintSnapshot, NotebookState
from .settings import EditorSettings


class Host(Protocol):
    # pygls's LanguageServer
    @property
    def workspace(self) -> Workspace: ...
    @property
    def work_done_progress(self) -> Progress: ...
    def feature(self, feature_name: str, options: Any | None = None) -> Callable[[Any], Any]: ...
    def command(self, command_name: str) -> Callable[[Any], Any]: ...

    # traindoctor's state (server.TrainDoctorServer)
    documents: dict[str, DocumentState]  # files and notebook cells, by uri
    notebooks: dict[str, NotebookState]
    settings: EditorSettings
    client: ClientFeatures
    diagnosis_diagnostics: dict[str, list[lsp.Diagnostic]]
    diagnosis_epoch: int
    engine_pool: ThreadPoolExecutor
    anomaly_runs: AnomalyRuns

    def workspace_dirs(self) -> list[str]: ...
    def first_workspace_dir(self) -> str | None: ...
    def log(self, message: str, level: lsp.MessageType = lsp.MessageType.Log) -> None: ...
    def config_for(self, doc: DocumentState) -> Config: ...
    def schedule_lint(self, doc: DocumentState, delay_ms: int = 0) -> None: ...
    async def current_snapshot(self, doc: DocumentState) -> LintSnapshot: ...
    def publish(self, uri: str, refresh: bool = True) -> None: ...
    def push(self, uri: str, diagnostics: list[lsp.Diagnostic], version: int | None) -> None: ...
    def publish_file_findings(self, uri: str, diagnostics: list[lsp.Diagnostic]) -> None: ...
    def set_diagnosis_diagnostics(self, by_uri: dict[str, list[lsp.Diagnostic]]) -> None: ...
