"""The pygls language server: documents in, diagnostics, actions and commands out.

It holds no analysis logic: the lint engine and the diagnosis modules do the work,
in a thread pool so that the event loop keeps answering requests meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from .. import __version__
from ..config import Config
from ..lint import lint_source
from . import actions, commands, hover, notebooks
from .actions import FIX_ALL_KIND
from .anomaly_runs import AnomalyRuns
from .convert import ClientFeatures, Converter, diagnostic
from .documents import CellDocument, DocumentState, LintSnapshot, NotebookState
from .protocol import RobustProtocol
from .settings import SECTION, EditorSettings
from .workspace_index import WorkspaceIndex

logger = logging.getLogger(__name__)

class TrainDoctorServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("traindoctor", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
                         protocol_cls=RobustProtocol, notebook_document_sync=notebooks.NOTEBOOK_SYNC)
        self.documents: dict[str, DocumentState] = {}  # files and notebook cells, by uri
        self.notebooks: dict[str, NotebookState] = {}
        self.settings = EditorSettings()
        self.client = ClientFeatures()
        # Diagnoses published on files (traceback / live), kept apart from lint results
        # so that neither overwrites the other.
        self.diagnosis_diagnostics: dict[str, list[lsp.Diagnostic]] = {}
        self._pushed: set[str] = set()  # uris with non-empty pushed diagnostics
        self._reported: set[str] = set()  # configuration problems already shown
        self._workspace_lint: dict[str, list[lsp.Diagnostic]] = {}  # lintWorkspace results, closed files
        self.diagnosis_epoch = 0  # changes whenever a published diagnosis does (pull result ids)
        # Our own pool: pygls's pool also reads stdin, and must never wait on a lint.
        self.engine_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="traindoctor-lint")
        self.anomaly_runs = AnomalyRuns()  # folders of debug launches with anomaly detection
        self.workspace_index = WorkspaceIndex()  # the project index, built in the background

    # --- workspace -------------------------------------------------------------

    def workspace_dirs(self) -> list[str]:
        dirs = []
        for folder in self.workspace.folders.values():
            path = to_fs_path(folder.uri)
            if path:
                dirs.append(path)
        if not dirs and self.workspace.root_path:
            dirs.append(self.workspace.root_path)
        return dirs

    def first_workspace_dir(self) -> str | None:
        dirs = self.workspace_dirs()
        return dirs[0] if dirs else None

    def report_problem(self, problem: str) -> None:
        """Shown once per distinct problem: a broken setting must not nag on every keystroke."""
        if problem in self._reported:
            return
        self._reported.add(problem)
        logger.warning("%s", problem)
        self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=f"traindoctor: {problem}"))

    def log(self, message: str, level: lsp.MessageType = lsp.MessageType.Log) -> None:
        self.window_log_message(lsp.LogMessageParams(type=level, message=message))

    # --- settings --------------------------------------------------------------

    def apply_settings(self, raw: Any) -> None:
        self.settings = EditorSettings.parse(raw)
        for problem in self.settings.problems:
            self.report_problem(problem)

    async def pull_settings(self) -> None:
        if not self.client.configuration:
            return
        try:
            values = await asyncio.wait_for(
                self.workspace_configuration_async(lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section=SECTION)])),
                timeout=10,
            )
        except Exception as exc:  # a client that fails the request keeps the old settings
            logger.warning("workspace/configuration failed: %s", exc)
            return
        self.apply_settings(values[0] if values else None)

    async def watch_files(self) -> None:
        """Ask the client to tell us when a pyproject.toml or a Python file changes on disk."""
        if not self.client.watch_files:
            return
        registration = lsp.Registration(
            id="traindoctor-files",
            method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=lsp.DidChangeWatchedFilesRegistrationOptions(
                watchers=[lsp.FileSystemWatcher(glob_pattern="**/pyproject.toml"),
                          lsp.FileSystemWatcher(glob_pattern="**/*.py")]
            ),
        )
        try:
            await asyncio.wait_for(
                self.client_register_capability_async(lsp.RegistrationParams(registrations=[registration])), 10
            )
        except Exception as exc:  # optional: without it, disk changes apply on the next edit
            logger.info("client did not register the file watcher: %s", exc)

    def config_for(self, doc: DocumentState) -> Config:
        config, problem = self.settings.config_for(doc.path, self.first_workspace_dir())
        if problem:
            self.report_problem(problem)
        return config

    # --- linting ---------------------------------------------------------------

    def open_document(self, uri: str) -> DocumentState:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        doc = self.documents[uri] = DocumentState(uri=uri, path=path)
        return doc

    def schedule_lint(self, doc: DocumentState, delay_ms: int = 0) -> None:
        if isinstance(doc, CellDocument):  # a cell is linted with its notebook
            notebooks.relint(self, doc)
            return
        generation = doc.generation
        doc.scheduled = generation
        doc.pending = asyncio.ensure_future(self._lint(doc, generation, delay_ms / 1000))

    async def _lint(self, doc: DocumentState, generation: int, delay: float) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        if not doc.is_current(generation):
            return
        try:
            text_document = self.workspace.get_text_document(doc.uri)
            text, version = text_document.source, text_document.version
        except Exception:
            return
        config = self.config_for(doc)
        codec = self.workspace.position_codec
        loop = asyncio.get_running_loop()
        try:
            snapshot = await loop.run_in_executor(
                self.engine_pool, _lint_in_thread, doc, generation, text, version, config, codec, self.client,
                self.workspace_index.project_for(doc)
            )
        except RuntimeError:  # the pool is gone: the server is shutting down
            return
        if snapshot is None or not doc.is_current(generation) or self.documents.get(doc.uri) is not doc:
            return
        if snapshot.error and (doc.latest is None or doc.latest.error != snapshot.error):
            self.log(f"{doc.path or doc.uri}: {snapshot.error}")
        doc.finish(snapshot)
        refresh, doc.refresh_on_finish = doc.refresh_on_finish, False
        self.publish(doc.uri, refresh=refresh)
        try:
            self.workspace_index.linted(self, doc)
        except Exception:  # the index is an extra: the file's diagnostics are out already
            logger.exception("project index update failed for %s", doc.path)

    async def current_snapshot(self, doc: DocumentState) -> LintSnapshot:
        """The lint result for the text as it is now (linting it if needed)."""
        if doc.latest is not None and doc.latest.generation == doc.generation:
            return doc.latest
        if doc.scheduled < doc.generation or doc.pending is None or doc.pending.done():
            self.schedule_lint(doc, 0)
        return await asyncio.wait_for(doc.wait_for(doc.generation), timeout=60)

    def relint_open_documents(self) -> None:
        """After a settings change: the client did not edit, so a pull client is told."""
        for doc in list(self.documents.values()):
            doc.bump()
            doc.refresh_on_finish = True
            self.schedule_lint(doc, 0)

    # --- publishing ------------------------------------------------------------

    def diagnostics_for(self, uri: str) -> list[lsp.Diagnostic]:
        doc = self.documents.get(uri)
        lint = list(doc.latest.diagnostics) if doc is not None and doc.latest is not None else []
        return lint + self.diagnosis_diagnostics.get(uri, [])

    def publish(self, uri: str, refresh: bool = True) -> None:
        """Push, or with a pull client ask it to pull again (`refresh`: the change did not
        come from the client's own edit, which it pulls for anyway). Files the editor has
        not opened are always pushed: a pull client only pulls for open documents."""
        # Notebook cells are always pushed: VS Code's language client pulls only for text
        # documents it opened itself, never for cells synced with their notebook.
        if self.client.pull_diagnostics and uri in self.documents and not isinstance(
            self.documents[uri], CellDocument
        ):
            if uri in self._pushed:  # pushed while closed: clear that copy, now pulled
                self.push(uri, [], None)
            if refresh and self.client.diagnostic_refresh:
                self.workspace_diagnostic_refresh(None)
            return
        doc = self.documents.get(uri)
        version = doc.latest.version if doc is not None and doc.latest is not None else None
        self.push(uri, self.diagnostics_for(uri), version)

    def push(self, uri: str, diagnostics: list[lsp.Diagnostic], version: int | None) -> None:
        if diagnostics:
            self._pushed.add(uri)
        elif uri not in self._pushed and uri not in self.documents:
            return  # nothing was shown there: nothing to clear
        else:
            self._pushed.discard(uri)
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )

    def publish_file_findings(self, uri: str, diagnostics: list[lsp.Diagnostic]) -> None:
        """Lint results for a file that is not open (lintWorkspace)."""
        if uri in self.documents:
            return
        self.push(uri, diagnostics + self.diagnosis_diagnostics.get(uri, []), None)
        if diagnostics:
            self._workspace_lint[uri] = diagnostics
        else:
            self._workspace_lint.pop(uri, None)

    def set_diagnosis_diagnostics(self, by_uri: dict[str, list[lsp.Diagnostic]]) -> None:
        """Replace every published diagnosis with these (one diagnosis on screen at a time)."""
        touched = set(self.diagnosis_diagnostics) | set(by_uri)
        self.diagnosis_diagnostics = {uri: diags for uri, diags in by_uri.items() if diags}
        self.diagnosis_epoch += 1
        for uri in touched:
            self._publish_any(uri)

    def _publish_any(self, uri: str) -> None:
        if uri in self.documents:
            self.publish(uri)
        else:
            self.push(uri, self._workspace_lint.get(uri, []) + self.diagnosis_diagnostics.get(uri, []), None)


def _lint_in_thread(doc: DocumentState, generation: int, text: str, version: int | None, config, codec,
                    client: ClientFeatures, project=None) -> LintSnapshot | None:
    if not doc.is_current(generation):
        return None  # a newer edit arrived while this run waited for a thread
    path = doc.path or doc.uri
    error = None
    findings: tuple = ()
    if doc.path is not None and config.is_excluded(doc.path):
        error = "excluded by [tool.traindoctor] exclude"
    else:
        try:
            with doc.cache_lock:
                result = lint_source(text, path, config, doc.cache, project)
            findings, error = result.findings, result.error
        except Exception as exc:  # the engine must never take the server down
            logger.exception("lint failed for %s", path)
            error = f"internal error while linting: {type(exc).__name__}: {exc}"
    converter = Converter(text, codec)
    diagnostics = tuple(diagnostic(f, converter, doc.uri, config, client) for f in findings)
    return LintSnapshot(generation, version, text, config, findings, diagnostics, converter, error)


def create_server() -> TrainDoctorServer:
    server = TrainDoctorServer()

    @server.feature(lsp.INITIALIZE)
    def on_initialize(ls: TrainDoctorServer, params: lsp.InitializeParams) -> None:
        ls.client = ClientFeatures.of(params.capabilities)
        options = params.initialization_options
        if isinstance(options, dict):
            ls.apply_settings(options.get(SECTION, options))

    @server.feature(lsp.INITIALIZED)
    async def on_initialized(ls: TrainDoctorServer, params: lsp.InitializedParams) -> None:
        before = ls.settings
        await ls.pull_settings()
        if ls.settings != before:  # documents opened meanwhile were linted with the old ones
            ls.relint_open_documents()
        await ls.watch_files()
        ls.workspace_index.start(ls)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def on_watched_files(ls: TrainDoctorServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        if any(change.uri.endswith("pyproject.toml") for change in params.changes):
            ls.relint_open_documents()  # [tool.traindoctor] may have changed
        # A Python file changed outside the editor: what it defines may answer another file.
        ls.workspace_index.reread(ls, [to_fs_path(c.uri) for c in params.changes
                                       if c.uri.startswith("file:") and c.uri.endswith(".py")])

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def on_configuration(ls: TrainDoctorServer, params: lsp.DidChangeConfigurationParams) -> None:
        settings = params.settings
        if isinstance(settings, dict) and isinstance(settings.get(SECTION), dict):
            ls.apply_settings(settings[SECTION])
        else:  # the pull model: the notification only says "ask again"
            await ls.pull_settings()
        ls.relint_open_documents()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def on_open(ls: TrainDoctorServer, params: lsp.DidOpenTextDocumentParams) -> None:
        old = ls.documents.get(params.text_document.uri)
        if old is not None:
            old.close()
        doc = ls.open_document(params.text_document.uri)
        doc.bump()
        ls.schedule_lint(doc, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def on_change(ls: TrainDoctorServer, params: lsp.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        doc = ls.documents.get(uri)
        if doc is None:
            return
        was_waiting = doc.scheduled > (doc.latest.generation if doc.latest else 0)
        doc.bump()
        if ls.diagnosis_diagnostics.pop(uri, None):
            ls.diagnosis_epoch += 1
            ls.publish(uri, refresh=False)  # the diagnosis described the old text; the client pulls after its edit
        lint_on_change = doc.latest.config.lint_on_change if doc.latest else True
        if ls.settings.lint_on_change is not None:
            lint_on_change = ls.settings.lint_on_change
        if lint_on_change:
            ls.schedule_lint(doc, ls.settings.lint_delay_ms)
        elif was_waiting:
            # The run for the opened/saved text was just invalidated; its replacement
            # lints the current text so that the result still arrives.
            ls.schedule_lint(doc, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE, lsp.SaveOptions(include_text=False))
    def on_save(ls: TrainDoctorServer, params: lsp.DidSaveTextDocumentParams) -> None:
        doc = ls.documents.get(params.text_document.uri)
        if doc is None:
            return
        doc.bump()
        ls.schedule_lint(doc, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def on_close(ls: TrainDoctorServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        doc = ls.documents.pop(uri, None)
        if doc is not None:
            doc.close()
            if doc.path:  # its unsaved edits are gone: the index holds the file on disk again
                ls.workspace_index.reread(ls, [doc.path])
        # Only a diagnosis outlives the editor tab; lint results go with it. A pull
        # client drops what it pulled by itself.
        if not ls.client.pull_diagnostics or uri in ls.diagnosis_diagnostics:
            ls.push(uri, ls.diagnosis_diagnostics.get(uri, []), None)

    @server.feature(
        lsp.TEXT_DOCUMENT_DIAGNOSTIC,
        lsp.DiagnosticOptions(identifier=SECTION, inter_file_dependencies=False, workspace_diagnostics=False),
    )
    async def on_pull(ls: TrainDoctorServer, params: lsp.DocumentDiagnosticParams):
        uri = params.text_document.uri
        doc = ls.documents.get(uri)
        if doc is None:
            return lsp.RelatedFullDocumentDiagnosticReport(items=ls.diagnosis_diagnostics.get(uri, []))
        if isinstance(doc, CellDocument):  # pushed (see publish): a pull must not double them
            return lsp.RelatedFullDocumentDiagnosticReport(items=[])
        target = max(doc.scheduled, 1)
        snapshot = await asyncio.wait_for(doc.wait_for(target), timeout=60)
        result_id = f"{snapshot.generation}.{ls.diagnosis_epoch}"
        if params.previous_result_id == result_id:
            return lsp.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        return lsp.RelatedFullDocumentDiagnosticReport(items=ls.diagnostics_for(uri), result_id=result_id)

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(
            code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.SourceFixAll, FIX_ALL_KIND],
            resolve_provider=True,
        ),
    )
    async def on_code_action(ls: TrainDoctorServer, params: lsp.CodeActionParams):
        doc = ls.documents.get(params.text_document.uri)
        if doc is None:
            return None
        snapshot = await ls.current_snapshot(doc)
        return await actions.code_actions(ls, doc, snapshot, params) or None

    @server.feature(lsp.CODE_ACTION_RESOLVE)
    async def on_resolve(ls: TrainDoctorServer, action: lsp.CodeAction) -> lsp.CodeAction:
        return await actions.resolve(ls, action)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def on_hover(ls: TrainDoctorServer, params: lsp.HoverParams):
        doc = ls.documents.get(params.text_document.uri)
        if doc is None:
            return None
        try:  # positions must refer to the text on screen; a lint takes a fraction of a second
            snapshot = await asyncio.wait_for(asyncio.shield(ls.current_snapshot(doc)), timeout=2)
        except asyncio.TimeoutError:
            snapshot = doc.latest
        if snapshot is None or snapshot.generation != doc.generation:
            return None
        return hover.hover(snapshot, params.position, ls.client)

    @server.feature(lsp.SHUTDOWN)
    def on_shutdown(ls: TrainDoctorServer, params: None) -> None:
        for doc in ls.documents.values():
            doc.close()
        ls.engine_pool.shutdown(wait=False, cancel_futures=True)
        ls.anomaly_runs.close()
        ls.workspace_index.close()

    commands.register(server)
    notebooks.register(server)
    return server


def serve_stdio() -> None:
    import sys

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # Anything printed by accident must not corrupt the protocol stream.
    sys.stdout = sys.stderr
    create_server().start_io(stdin, stdout)


def serve_tcp(host: str, port: int) -> None:
    create_server().start_tcp(host, port)


__all__ = ["FIX_ALL_KIND", "TrainDoctorServer", "create_server", "serve_stdio", "serve_tcp"]
