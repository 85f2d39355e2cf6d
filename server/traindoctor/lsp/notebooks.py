"""Jupyter notebooks in the editor (LSP 3.17 notebook document sync).

The client syncs a notebook and its Python cells; each cell is a text document of its
own for diagnostics, hovers and code actions. The cells are linted together, as one
program (lint/notebook.py), with one LintCache per notebook: an edit in one cell
re-parses only that cell's blocks. After each run every cell gets a snapshot of its
own (its text, its findings, its diagnostics), so the per-document code in server.py,
actions.py and hover.py serves cells unchanged. Cell diagnostics are always pushed
(publishDiagnostics), also to clients that pull for files: VS Code's language client
never pulls for notebook cells.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.uris import to_fs_path

from ..config import Config
from ..lint import fix_source
from ..lint.notebook import NotebookProgram, lint_notebook_program, program_from_cells
from .convert import SOURCE, Converter, diagnostic
from .documents import CellDocument, DocumentState, LintSnapshot, NotebookState

if TYPE_CHECKING:
    from ..model import Diagnosis, Frame
    from .host import Host

logger = logging.getLogger(__name__)

NOTEBOOK_SYNC = lsp.NotebookDocumentSyncOptions(
    notebook_selector=[lsp.NotebookDocumentFilterWithNotebook(
        notebook="jupyter-notebook", cells=[lsp.NotebookCellLanguage(language="python")])],
    save=True,
)


def _cells(ls: "Host", uri: str) -> list[tuple[str, int, str, int | None]]:
    """(cell uri, number, text, version) of the notebook's Python code cells, in order."""
    notebook = ls.workspace.get_notebook_document(notebook_uri=uri)
    if notebook is None:
        return []
    out = []
    for index, cell in enumerate(notebook.cells):
        if cell.kind != lsp.NotebookCellKind.Code:
            continue
        try:
            document = ls.workspace.get_text_document(cell.document)
        except Exception:
            continue
        if (document.language_id or "python") != "python":
            continue
        out.append((cell.document, index + 1, document.source, document.version))
    return out


def sync(ls: "Host", uri: str, delay_ms: int = 0) -> None:
    """The notebook's cells changed (opened, edited, added, removed): lint again."""
    state = ls.notebooks.get(uri)
    if state is None:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        state = ls.notebooks[uri] = NotebookState(uri, DocumentState(uri=uri, path=path))
    current = {cell_uri: number for cell_uri, number, _text, _version in _cells(ls, uri)}
    for cell_uri in list(state.cells):
        if cell_uri not in current:
            _drop_cell(ls, state, cell_uri)
    for cell_uri, number in current.items():
        cell = state.cells.get(cell_uri)
        if cell is None:
            cell = state.cells[cell_uri] = CellDocument(uri=cell_uri, path=state.program_doc.path,
                                                        notebook_uri=uri, number=number, notebook=state)
            ls.documents[cell_uri] = cell
        cell.number = number
    schedule(ls, state, delay_ms)


def schedule(ls: "Host", state: NotebookState, delay_ms: int = 0) -> None:
    doc = state.program_doc
    doc.bump()
    for cell in state.cells.values():
        cell.bump()
        cell.scheduled = cell.generation
    generation = doc.scheduled = doc.generation
    doc.pending = asyncio.ensure_future(_lint(ls, state, generation, delay_ms / 1000))


def relint(ls: "Host", cell: CellDocument) -> None:
    """A cell's snapshot is wanted for text it has not been linted on (server.schedule_lint)."""
    state = ls.notebooks.get(cell.notebook_uri)
    if state is not None:
        schedule(ls, state, 0)


async def _lint(ls: "Host", state: NotebookState, generation: int, delay: float) -> None:
    if delay > 0:
        await asyncio.sleep(delay)
    doc = state.program_doc
    if not doc.is_current(generation):
        return
    cells = _cells(ls, state.uri)
    program = program_from_cells([(number, text) for _uri, number, text, _version in cells])
    config = ls.config_for(doc)
    generations = {uri: cell.generation for uri, cell in state.cells.items()}
    loop = asyncio.get_running_loop()
    try:
        result = await loop.run_in_executor(ls.engine_pool, _lint_in_thread, doc, generation, program, config)
    except RuntimeError:  # the pool is gone: the server is shutting down
        return
    if result is None or not doc.is_current(generation) or ls.notebooks.get(state.uri) is not state:
        return
    if result.error:
        ls.log(f"{doc.path or doc.uri}: {result.error}")
    state.program = program
    codec = ls.workspace.position_codec
    for cell_uri, number, text, version in cells:
        cell = state.cells.get(cell_uri)
        if cell is None or cell.generation != generations.get(cell_uri):
            continue
        findings = tuple(f for f in result.findings if f.cell == number)
        converter = Converter(text, codec)
        diagnostics = tuple(diagnostic(f, converter, cell_uri, config, ls.client) for f in findings)
        cell.finish(LintSnapshot(cell.generation, version, text, config, findings, diagnostics, converter,
                                 result.error))
        ls.publish(cell_uri, refresh=False)

    doc.finish(LintSnapshot(generation, None, program.text, config, (), (), Converter(program.text, codec),
                            result.error))


def _lint_in_thread(doc: DocumentState, generation: int, program: NotebookProgram, config: Config):
    if not doc.is_current(generation):
        return None
    path = doc.path or doc.uri
    if doc.path is not None and config.is_excluded(doc.path):
        return lint_notebook_program(program_from_cells([]), path, config)
    try:
        with doc.cache_lock:
            return lint_notebook_program(program, path, config, doc.cache, skip_broken_cells=True)
    except Exception as exc:  # the engine must never take the server down
        logger.exception("lint failed for %s", path)
        from ..lint import LintResult

        return LintResult(path, error=f"internal error while linting: {type(exc).__name__}: {exc}")


def fixed_text(doc: DocumentState, snapshot: LintSnapshot) -> str:
    """The text of `doc` with every safe fix applied: a cell is fixed as part of its
    notebook's program, so that facts from other cells count."""
    if not isinstance(doc, CellDocument):
        return fix_source(snapshot.text, doc.path or doc.uri, snapshot.config)[0]
    program = doc.notebook.program if doc.notebook is not None else None
    if program is None:
        return snapshot.text
    fixed, _count = fix_source(program.text, doc.path or doc.uri, snapshot.config)
    sources = program.split(fixed)
    return sources.get(doc.number, snapshot.text) if sources else snapshot.text


def _drop_cell(ls: "Host", state: NotebookState, cell_uri: str) -> None:
    cell = state.cells.pop(cell_uri, None)
    if cell is None:
        return
    cell.close()
    if ls.documents.get(cell_uri) is cell:
        del ls.documents[cell_uri]
    ls.push(cell_uri, [], None)  # cells are always pushed (server.publish)


def close(ls: "Host", uri: str) -> None:
    state = ls.notebooks.pop(uri, None)
    if state is None:
        return
    state.program_doc.close()
    for cell_uri in list(state.cells):
        _drop_cell(ls, state, cell_uri)


def register(server: "Host") -> None:
    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_OPEN)
    def on_open(ls: "Host", params: lsp.DidOpenNotebookDocumentParams) -> None:
        close(ls, params.notebook_document.uri)
        sync(ls, params.notebook_document.uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def on_change(ls: "Host", params: lsp.DidChangeNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        state = ls.notebooks.get(uri)
        if state is None:
            return
        for content in (params.change.cells.text_content or []) if params.change.cells else []:
            if ls.diagnosis_diagnostics.pop(content.document.uri, None):
                ls.diagnosis_epoch += 1  # a diagnosis described the old text of this cell
        lint_on_change = state.program_doc.latest.config.lint_on_change if state.program_doc.latest else True
        if ls.settings.lint_on_change is not None:
            lint_on_change = ls.settings.lint_on_change
        structural = bool(params.change.cells and params.change.cells.structure)
        if lint_on_change or structural:
            sync(ls, uri, ls.settings.lint_delay_ms if not structural else 0)
        else:
            for cell in state.cells.values():  # their snapshots no longer match the text
                cell.bump()

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_SAVE)
    def on_save(ls: "Host", params: lsp.DidSaveNotebookDocumentParams) -> None:
        if params.notebook_document.uri in ls.notebooks:
            sync(ls, params.notebook_document.uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def on_close(ls: "Host", params: lsp.DidCloseNotebookDocumentParams) -> None:
        close(ls, params.notebook_document.uri)


# --- tracebacks from notebook cells ---------------------------------------------------

_IPYTHON_FRAME = re.compile(r"^(?:Cell In\s?\[(?P<cell>\d+)\]|Input In \[(?P<input>\d+)\]|<ipython-input-(?P<old>\d+)-[0-9a-f]+>)$")


def execution_count(frame_path: str) -> int | None:
    """`Cell In[12]`, `Input In [12]`, `<ipython-input-12-ab3f…>` -> 12; None for a file."""
    match = _IPYTHON_FRAME.match(frame_path.strip())
    if match is None:
        return None
    return int(match.group("cell") or match.group("input") or match.group("old"))


def cell_for_frame(ls: "Host", frame: "Frame") -> tuple[str, str] | None:
    """The open notebook cell an IPython frame ran in: (cell uri, cell text). The cell
    whose execution count is the frame's `In[N]` and whose line shows the frame's code;
    without execution counts from the client, the cell whose line shows that code."""
    count = execution_count(frame.path)
    if count is None:
        return None
    wanted = (frame.code or "").strip()
    by_count, by_code = [], []
    for state in ls.notebooks.values():
        notebook = ls.workspace.get_notebook_document(notebook_uri=state.uri)
        summaries = {c.document: c.execution_summary for c in notebook.cells} if notebook is not None else {}
        for cell_uri in state.cells:
            try:
                text = ls.workspace.get_text_document(cell_uri).source
            except Exception:
                continue
            lines = text.splitlines()
            shows_code = 0 < frame.line <= len(lines) and bool(wanted) and lines[frame.line - 1].strip() == wanted
            summary = summaries.get(cell_uri)
            if summary is not None and summary.execution_order == count and (shows_code or not wanted):
                by_count.append((cell_uri, text))
            elif shows_code:
                by_code.append((cell_uri, text))
    found = by_count or by_code
    return found[0] if len(found) == 1 or by_count else None


def diagnosis_on_cells(ls: "Host", diagnosis: "Diagnosis") -> dict[str, list[lsp.Diagnostic]]:
    """Diagnostics on the notebook cells of the traceback's IPython frames (the user's
    code in a notebook), as `commands.diagnosis_diagnostics` puts them on files."""
    frames = list(diagnosis.frames)
    if diagnosis.location is not None and diagnosis.location not in frames:
        frames.append(diagnosis.location)
    out: dict[str, list[lsp.Diagnostic]] = {}
    codec = ls.workspace.position_codec
    for frame in frames:
        found = cell_for_frame(ls, frame)
        if found is None:
            continue
        cell_uri, text = found
        converter = Converter(text, codec)
        line = min(max(frame.line - 1, 0), len(converter.lines) - 1)
        body = converter.lines[line].rstrip("\r\n")
        start = len(body) - len(body.lstrip())
        out.setdefault(cell_uri, []).append(lsp.Diagnostic(
            range=lsp.Range(converter.position(line, start), converter.position(line, len(body))),
            message=diagnosis.title if frame == (diagnosis.location or frame) else f"{diagnosis.title} (via {frame.function})",
            severity=lsp.DiagnosticSeverity.Error,
            code=diagnosis.kind,
            source=SOURCE,
        ))
    return out
