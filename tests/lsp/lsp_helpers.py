"""The test client: pytest-lsp's LanguageClient plus what an editor does with the text."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

FIXTURES = Path(__file__).parent / "fixtures"
CLIENTS = ["visual-studio-code", "neovim", "emacs"]
SERVER_COMMAND = [sys.executable, "-m", "traindoctor", "serve"]
WAIT_S = 20


class EditorClient(LanguageClient):
    """pytest-lsp's client plus what an editor does: keep the text, apply edits, read
    diagnostics the way this client gets them (pushed or pulled)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.published: list[lsp.PublishDiagnosticsParams] = []
        self.events: list[tuple[str, str, str]] = []  # ("publish", uri, "") / ("progress", token, kind), in order
        self.registrations: list[lsp.Registration] = []
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self.encoding: str = "utf-16"
        self.root: Path | None = None

    @property
    def pulls(self) -> bool:
        return self.capabilities is not None and self.capabilities.text_document.diagnostic is not None

    # --- documents ------------------------------------------------------------------

    def open(self, path: Path, text: str | None = None) -> str:
        if text is None:
            text = path.read_text(encoding="utf-8")
        uri = path.as_uri()
        self.texts[uri], self.versions[uri] = text, 1
        self.text_document_did_open(
            lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
        )
        return uri

    def edit(self, uri: str, rng: lsp.Range, new_text: str) -> None:
        """One incremental change, as an editor sends it."""
        self.texts[uri] = apply_text_edits(self.texts[uri], [lsp.TextEdit(rng, new_text)], self.encoding)
        self.versions[uri] += 1
        self.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                content_changes=[lsp.TextDocumentContentChangePartial(range=rng, text=new_text)],
            )
        )

    def close(self, uri: str) -> None:
        self.text_document_did_close(lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri)))

    def apply_workspace_edit(self, edit: lsp.WorkspaceEdit) -> None:
        """Apply a server's WorkspaceEdit to the open documents, one didChange per edit."""
        by_uri: dict[str, list[lsp.TextEdit]] = {}
        for change in edit.document_changes or []:
            assert isinstance(change, lsp.TextDocumentEdit), change
            if change.text_document.version is not None:
                assert change.text_document.version == self.versions[change.text_document.uri], "edit for a stale version"
            by_uri.setdefault(change.text_document.uri, []).extend(change.edits)
        for uri, edits in (edit.changes or {}).items():
            by_uri.setdefault(uri, []).extend(edits)
        for uri, edits in by_uri.items():
            # Later edits first, so that earlier positions stay valid.
            for text_edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
                self.edit(uri, text_edit.range, text_edit.new_text)

    # --- diagnostics ----------------------------------------------------------------

    async def current_diagnostics(self, uri: str) -> list[lsp.Diagnostic]:
        """The diagnostics for the document's current version (push: waits for the
        publish of that version; pull: asks)."""
        version = self.versions.get(uri)
        if self.pulls and uri in self.texts:
            report = await asyncio.wait_for(
                self.text_document_diagnostic_async(lsp.DocumentDiagnosticParams(lsp.TextDocumentIdentifier(uri))),
                WAIT_S,
            )
            assert isinstance(report, lsp.RelatedFullDocumentDiagnosticReport), report
            return list(report.items)
        return await self.wait_for_publish(uri, lambda p: version is None or p.version in (version, None))

    async def wait_for_publish(self, uri: str, accept=lambda p: True, after: int = 0) -> list[lsp.Diagnostic]:
        deadline = asyncio.get_running_loop().time() + WAIT_S
        while True:
            for params in reversed(self.published[after:]):
                if params.uri == uri:
                    if accept(params):
                        return list(params.diagnostics)
                    break
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"no matching publishDiagnostics for {uri}; got {self.published[after:][-3:]}")
            await asyncio.sleep(0.02)

    async def eventually(self, uri: str, predicate, timeout: float = WAIT_S) -> list[lsp.Diagnostic]:
        """Diagnostics once `predicate` holds (for changes the client did not make itself)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            if self.pulls and uri in self.texts:
                diagnostics = await self.current_diagnostics(uri)
            else:
                diagnostics = list(self.diagnostics_pushed(uri))
            if predicate(diagnostics):
                return diagnostics
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"condition never held; last diagnostics: {diagnostics}")
            await asyncio.sleep(0.05)

    def diagnostics_pushed(self, uri: str) -> list[lsp.Diagnostic]:
        for params in reversed(self.published):
            if params.uri == uri:
                return list(params.diagnostics)
        return []

    # --- code actions ---------------------------------------------------------------

    async def code_actions(self, uri: str, rng: lsp.Range, diagnostics=(), only=None) -> list[lsp.CodeAction]:
        result = await self.text_document_code_action_async(
            lsp.CodeActionParams(
                text_document=lsp.TextDocumentIdentifier(uri),
                range=rng,
                context=lsp.CodeActionContext(diagnostics=list(diagnostics), only=only),
            )
        )
        return [a for a in result or [] if isinstance(a, lsp.CodeAction)]

    async def resolved(self, action: lsp.CodeAction) -> lsp.CodeAction:
        if action.edit is None:
            assert action.data is not None, "an action without edit must be resolvable"
            action = await self.code_action_resolve_async(action)
        assert action.edit is not None, action
        return action


def _units(char: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(char.encode("utf-8"))
    if encoding == "utf-16":
        return len(char.encode("utf-16-le")) // 2
    return 1


def offset_of(text: str, pos: lsp.Position, encoding: str) -> int:
    lines = text.splitlines(keepends=True) or [""]
    offset = sum(len(line) for line in lines[: pos.line])
    if pos.line >= len(lines):
        return len(text)
    line = lines[pos.line].rstrip("\r\n")
    units = 0
    for index, char in enumerate(line):
        if units >= pos.character:
            return offset + index
        units += _units(char, encoding)
    return offset + len(line)


def position_of(text: str, offset: int, encoding: str) -> lsp.Position:
    before = text[:offset]
    line = before.count("\n")
    column_text = before[before.rfind("\n") + 1 :]
    return lsp.Position(line, sum(_units(c, encoding) for c in column_text))


def code_points(text: str, pos: lsp.Position, encoding: str) -> tuple[int, int]:
    """An LSP position in `encoding` -> (line, code-point column)."""
    offset = offset_of(text, pos, encoding)
    line_start = text.rfind("\n", 0, offset) + 1
    return pos.line, offset - line_start


def apply_text_edits(text: str, edits, encoding: str) -> str:
    spans = sorted(
        ((offset_of(text, e.range.start, encoding), offset_of(text, e.range.end, encoding), e.new_text) for e in edits),
        reverse=True,
    )
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text


def make_client() -> EditorClient:
    client = EditorClient(converter_factory=default_converter)
    features = dict(DEFAULT_CLIENT_FEATURES)
    default_publish = features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def publish(client: EditorClient, params: lsp.PublishDiagnosticsParams):
        client.published.append(params)
        client.events.append(("publish", params.uri, ""))
        default_publish(client, params)

    features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish
    default_progress = features[lsp.PROGRESS]

    def progress(client: EditorClient, params: lsp.ProgressParams):
        default_progress(client, params)
        kind = params.value.get("kind", "") if isinstance(params.value, dict) else ""
        client.events.append(("progress", str(params.token), kind))

    features[lsp.PROGRESS] = progress

    def register_capability(client: EditorClient, params: lsp.RegistrationParams):
        client.registrations.extend(params.registrations)

    features[lsp.CLIENT_REGISTER_CAPABILITY] = register_capability
    register_lsp_features(client, features)
    return client


CONFIG = ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client)


async def start_session(client: EditorClient, client_name: str, root: Path, settings: dict | None = None) -> lsp.InitializeResult:
    client.set_configuration({"lintDelay": 0, **(settings or {})}, section="traindoctor")
    result = await client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities(client_name),
            workspace_folders=[lsp.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
            root_uri=root.as_uri(),
        )
    )
    client.encoding = str(result.capabilities.position_encoding or "utf-16")
    client.root = root
    return result
