"""Notebook cells over LSP 3.17 notebook document sync, with the real `traindoctor serve`.

The client is VS Code's recorded capabilities plus the notebook synchronization
capability that vscode-languageclient 9 announces; once without and once with pull
diagnostics. Cell diagnostics are pushed in both cases (VS Code never pulls for cells);
a pull for a cell answers nothing, so a client that does both sees no duplicates.
"""

from __future__ import annotations

import ast
import asyncio
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import client_capabilities

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lsp"))
from lsp_helpers import CONFIG, EditorClient, start_session  # noqa: E402

from traindoctor.config import Config  # noqa: E402
from traindoctor.lint import LintCache  # noqa: E402
from traindoctor.lint.notebook import lint_notebook_program, program_from_cells  # noqa: E402

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

IMPORTS = "%matplotlib inline\nimport torch\nfrom torch import nn\n"
SETUP = ("model = nn.Linear(4, 2)\ncriterion = nn.CrossEntropyLoss()\n"
         "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n")
LOOP = ("total = 0\nfor x, y in loader:\n    optimizer.zero_grad()\n    loss = criterion(model(x), y)\n"
        "    loss.backward()\n    optimizer.step()\n    total += loss\nprint(total)")
MARKDOWN = "# Training\nThe loop below leaks memory."


class NotebookClient(EditorClient):
    def open_notebook(self, path: Path, cells: list[tuple[str, str]], counts: list[int | None] | None = None) -> list[str]:
        """cells: (kind, text), kind "code" or "markdown"; counts: the execution count of
        each cell, as VS Code sends it (executionSummary). Returns the cell uris."""
        counts = counts or [None] * len(cells)
        uri = path.as_uri()
        cell_uris = [f"vscode-notebook-cell:{path}#W{i}sZmlsZQ%3D%3D" for i in range(len(cells))]
        self.notebook_uri, self.notebook_version = uri, 1
        self.cell_uris = list(cell_uris)
        items = []
        for cell_uri, (kind, text) in zip(cell_uris, cells):
            self.texts[cell_uri], self.versions[cell_uri] = text, 1
            items.append(lsp.TextDocumentItem(uri=cell_uri, language_id="python" if kind == "code" else "markdown",
                                              version=1, text=text))
        self.notebook_document_did_open(lsp.DidOpenNotebookDocumentParams(
            notebook_document=lsp.NotebookDocument(
                uri=uri, notebook_type="jupyter-notebook", version=1,
                cells=[lsp.NotebookCell(kind=lsp.NotebookCellKind.Code if k == "code" else lsp.NotebookCellKind.Markup,
                                        document=u,
                                        execution_summary=lsp.ExecutionSummary(execution_order=n) if n else None)
                       for u, (k, _t), n in zip(cell_uris, cells, counts)]),
            cell_text_documents=[i for i, (k, _t) in zip(items, cells) if k == "code"]))
        return cell_uris

    def edit(self, uri: str, rng: lsp.Range, new_text: str) -> None:
        if not uri.startswith("vscode-notebook-cell:"):
            return super().edit(uri, rng, new_text)
        from lsp_helpers import apply_text_edits

        self.texts[uri] = apply_text_edits(self.texts[uri], [lsp.TextEdit(rng, new_text)], self.encoding)
        self.versions[uri] += 1
        self.notebook_version += 1
        self.notebook_document_did_change(lsp.DidChangeNotebookDocumentParams(
            notebook_document=lsp.VersionedNotebookDocumentIdentifier(version=self.notebook_version,
                                                                      uri=self.notebook_uri),
            change=lsp.NotebookDocumentChangeEvent(cells=lsp.NotebookDocumentCellChanges(text_content=[
                lsp.NotebookDocumentCellContentChanges(
                    document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                    changes=[lsp.TextDocumentContentChangePartial(range=rng, text=new_text)])]))))

    @property
    def pulls(self) -> bool:
        return False  # cell diagnostics are pushed, also to clients that pull for files

    def insert_cell(self, index: int, text: str) -> str:
        cell_uri = f"vscode-notebook-cell:{self.notebook_uri[7:]}#X{index}new"
        self.texts[cell_uri], self.versions[cell_uri] = text, 1
        self.cell_uris.insert(index, cell_uri)
        self.notebook_version += 1
        self.notebook_document_did_change(lsp.DidChangeNotebookDocumentParams(
            notebook_document=lsp.VersionedNotebookDocumentIdentifier(version=self.notebook_version,
                                                                      uri=self.notebook_uri),
            change=lsp.NotebookDocumentChangeEvent(cells=lsp.NotebookDocumentCellChanges(
                structure=lsp.NotebookDocumentCellChangeStructure(
                    array=lsp.NotebookCellArrayChange(start=index, delete_count=0, cells=[
                        lsp.NotebookCell(kind=lsp.NotebookCellKind.Code, document=cell_uri)]),
                    did_open=[lsp.TextDocumentItem(uri=cell_uri, language_id="python", version=1, text=text)])))))
        return cell_uri

    def delete_cell(self, index: int) -> None:
        cell_uri = self.cell_uris.pop(index)
        self.texts.pop(cell_uri)
        self.notebook_version += 1
        self.notebook_document_did_change(lsp.DidChangeNotebookDocumentParams(
            notebook_document=lsp.VersionedNotebookDocumentIdentifier(version=self.notebook_version,
                                                                      uri=self.notebook_uri),
            change=lsp.NotebookDocumentChangeEvent(cells=lsp.NotebookDocumentCellChanges(
                structure=lsp.NotebookDocumentCellChangeStructure(
                    array=lsp.NotebookCellArrayChange(start=index, delete_count=1),
                    did_close=[lsp.TextDocumentIdentifier(uri=cell_uri)])))))


def _capabilities(pull: bool) -> lsp.ClientCapabilities:
    caps = client_capabilities("visual-studio-code")
    caps.notebook_document = lsp.NotebookDocumentClientCapabilities(
        synchronization=lsp.NotebookDocumentSyncClientCapabilities(dynamic_registration=True,
                                                                   execution_summary_support=True))
    if pull:
        caps.text_document.diagnostic = lsp.DiagnosticClientCapabilities(dynamic_registration=True,
                                                                         related_document_support=False)
    return caps


def _make_client() -> NotebookClient:
    from lsp_helpers import make_client

    client = make_client()
    client.__class__ = NotebookClient
    return client


NB_CONFIG = type(CONFIG)(server_command=CONFIG.server_command, client_factory=_make_client)


@pytest_lsp.fixture(params=["push", "pull"], config=NB_CONFIG)
async def client(lsp_client: NotebookClient, request, tmp_path: Path):
    root = tmp_path / "project"
    root.mkdir()
    original = pytest_lsp.client_capabilities
    # start_session asks pytest-lsp for a named client; hand it ours.
    import lsp_helpers

    lsp_helpers.client_capabilities = lambda _name: _capabilities(request.param == "pull")
    try:
        result = await start_session(lsp_client, "visual-studio-code", root)
    finally:
        lsp_helpers.client_capabilities = original
    lsp_client.server_capabilities = result.capabilities
    lsp_client.root = root
    yield
    await lsp_client.shutdown_session()


def _open(client: NotebookClient) -> list[str]:
    return client.open_notebook(client.root / "train.ipynb",
                                [("markdown", MARKDOWN), ("code", IMPORTS), ("code", SETUP), ("code", LOOP)])


async def _trn101(client, uri: str) -> lsp.Diagnostic:
    diagnostics = await client.eventually(uri, lambda ds: any(d.code == "TRN101" for d in ds))
    [diagnostic] = [d for d in diagnostics if d.code == "TRN101"]
    return diagnostic


async def test_the_server_announces_notebook_sync_for_python_cells(client):
    sync = client.server_capabilities.notebook_document_sync
    assert sync is not None
    [selector] = sync.notebook_selector
    assert selector.notebook == "jupyter-notebook" and [c.language for c in selector.cells] == ["python"]


async def test_a_cell_gets_the_diagnostic_at_its_own_line(client):
    _md, imports, setup, loop = _open(client)
    diagnostic = await _trn101(client, loop)
    # `import torch` is two cells above: facts flow across cells.
    assert (diagnostic.range.start.line, diagnostic.range.start.character) == (6, 4)
    assert (diagnostic.range.end.line, diagnostic.range.end.character) == (6, 17)
    for other in (imports, setup):
        assert not [d for d in await client.eventually(other, lambda ds: True) if d.code == "TRN101"]


async def test_hover_on_the_cell_explains_the_rule(client):
    *_, loop = _open(client)
    diagnostic = await _trn101(client, loop)
    hover = await client.text_document_hover_async(lsp.HoverParams(lsp.TextDocumentIdentifier(loop),
                                                                    diagnostic.range.start))
    assert hover is not None and "TRN101" in hover.contents.value and "Why" in hover.contents.value


async def test_quick_fix_and_ignore_edit_the_cell(client):
    *_, loop = _open(client)
    diagnostic = await _trn101(client, loop)
    actions = await client.code_actions(loop, diagnostic.range, [diagnostic])
    titles = [a.title for a in actions]
    assert "Ignore TRN101 on this line" in titles
    [fix] = [a for a in actions if a.title.startswith("Accumulate")]
    edit = (await client.resolved(fix)).edit
    targets = {c.text_document.uri for c in edit.document_changes or []} | set(edit.changes or {})
    assert targets == {loop}
    client.apply_workspace_edit(edit)
    assert "    total += loss.item()\n" in client.texts[loop]
    await client.eventually(loop, lambda ds: not [d for d in ds if d.code == "TRN101"])

    # Break it again by hand, then silence it.
    line = client.texts[loop].splitlines()[6]
    client.edit(loop, lsp.Range(lsp.Position(6, 0), lsp.Position(6, len(line))), "    total += loss")
    diagnostic = await _trn101(client, loop)
    [ignore] = [a for a in await client.code_actions(loop, diagnostic.range, [diagnostic])
                if a.title == "Ignore TRN101 on this line"]
    client.apply_workspace_edit((await client.resolved(ignore)).edit)
    assert client.texts[loop].splitlines()[6] == "    total += loss  # traindoctor: ignore[TRN101]"
    await client.eventually(loop, lambda ds: not [d for d in ds if d.code == "TRN101"])


async def test_fix_all_fixes_the_cell_with_facts_from_other_cells(client):
    *_, loop = _open(client)
    await _trn101(client, loop)
    actions = await client.code_actions(loop, lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)),
                                        only=["source.fixAll.traindoctor"])
    [fix_all] = actions
    client.apply_workspace_edit((await client.resolved(fix_all)).edit)
    text = client.texts[loop]
    assert "total += loss.item()" in text
    ast.parse(text)


async def test_cells_added_and_removed_are_linted_with_the_notebook(client):
    _md, imports, setup, loop = _open(client)
    await _trn101(client, loop)
    new = client.insert_cell(4, "outputs = []\nfor x, _ in loader:\n    out = model(x)\n    out.sum().backward()\n"
                                "    outputs.append(out)\n")
    diagnostics = await client.eventually(new, lambda ds: any(d.code == "TRN101" for d in ds))
    assert [d.range.start.line for d in diagnostics if d.code == "TRN101"] == [4]
    client.delete_cell(4)
    await client.eventually(new, lambda ds: not ds)
    await _trn101(client, loop)


async def test_a_half_typed_cell_does_not_hide_the_others(client):
    _md, imports, setup, loop = _open(client)
    await _trn101(client, loop)
    client.edit(setup, lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), "model = nn.Linear(4,\n")
    await asyncio.sleep(0.3)
    diagnostic = await _trn101(client, loop)
    assert diagnostic.range.start.line == 6


def test_an_edit_in_one_cell_reparses_only_the_block_holding_it():
    cells = [(2, IMPORTS), (3, SETUP), (4, LOOP), (5, "x = torch.ones(2)\ny = x * 2\n")]
    cache = LintCache()
    first = lint_notebook_program(program_from_cells(cells), "nb.ipynb", Config(), cache)
    before = {id(parsed) for group in cache._blocks.values() for parsed in group}
    edited = [(n, s.replace("y = x * 2", "y = x * 3")) for n, s in cells]
    second = lint_notebook_program(program_from_cells(edited), "nb.ipynb", Config(), cache)
    after = [parsed for group in cache._blocks.values() for parsed in group]
    reparsed = [p.text for p in after if id(p) not in before]
    # one block: the run of simple statements holding the edit (it may start in the cell before)
    assert len(reparsed) == 1 and reparsed[0].endswith("x = torch.ones(2)\ny = x * 3\n"), reparsed
    assert first.findings == second.findings and [f.cell for f in first.findings] == [4]


DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("with_counts", [True, False], ids=["execution-counts", "code-only"])
async def test_a_traceback_from_a_cell_output_lands_on_the_cells(client, with_counts: bool):
    """shape_mismatch.log is what IPython printed when shape_mismatch.ipynb ran (In[1..3])."""
    import nbformat

    notebook = nbformat.read(DATA / "shape_mismatch.ipynb", as_version=4)
    cells = [("code" if c.cell_type == "code" else "markdown", c.source) for c in notebook.cells]
    # A decoy that shows the same line as In[3] but ran as In[4] (execution counts tell them apart).
    cells.append(("code", "model = make_model(20)\nbatch = torch.randn(8, 20)\nloss = train_step(model, batch)\n"))
    counts = [None, 1, 2, 3, 4] if with_counts else None
    uris = client.open_notebook(client.root / "shape_mismatch.ipynb", cells, counts)
    log = (DATA / "shape_mismatch.log").read_text(encoding="utf-8")
    result = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="traindoctor.diagnoseTraceback", arguments=[log]))
    assert result["kind"] == "shape-mismatch"
    definition = await client.eventually(uris[2], lambda ds: any(d.code == "shape-mismatch" for d in ds))
    [on_def] = [d for d in definition if d.code == "shape-mismatch"]
    assert on_def.range.start.line == 9  # `logits = model(batch)`, line 10 of In[2]
    assert client.texts[uris[2]].splitlines()[9][on_def.range.start.character:] == "logits = model(batch)"
    if with_counts:
        call = await client.eventually(uris[3], lambda ds: any(d.code == "shape-mismatch" for d in ds))
        assert [d.range.start.line for d in call if d.code == "shape-mismatch"] == [2]
    decoy = client.diagnostics_pushed(uris[4])
    assert not [d for d in decoy if d.code == "shape-mismatch"]


async def test_a_pull_for_a_cell_answers_nothing_so_pushes_are_not_doubled(client):
    *_, loop = _open(client)
    await _trn101(client, loop)
    if client.capabilities.text_document.diagnostic is None:
        return
    report = await client.text_document_diagnostic_async(lsp.DocumentDiagnosticParams(lsp.TextDocumentIdentifier(loop)))
    assert not report.items
