"""Diagnostics over LSP: the right codes at the right ranges, kept in step with the text."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsp_helpers import FIXTURES, code_points, position_of
from lsprotocol import types as lsp

from traindoctor.lint import lint_source

FIXTURE = (FIXTURES / "train_buggy.py").read_text(encoding="utf-8")


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


def _expected(text: str, path: str) -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    """What the engine finds in `text`: (code, start, end) in code points."""
    findings = lint_source(text, path).findings
    return sorted(
        (f.code, (f.range.start.line, f.range.start.column), (f.range.end.line, f.range.end.column)) for f in findings
    )


def _got(client, text: str, diagnostics) -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    return sorted(
        (str(d.code), code_points(text, d.range.start, client.encoding), code_points(text, d.range.end, client.encoding))
        for d in diagnostics
        if d.source == "traindoctor"
    )


async def test_open_buggy_script_reports_each_bug_at_its_range(client, workspace: Path):
    uri = client.open(workspace / "train.py")
    diagnostics = await client.current_diagnostics(uri)

    accumulate = _line_of(FIXTURE, "total_loss += loss")
    trn101 = [d for d in diagnostics if d.code == "TRN101"]
    assert len(trn101) == 1, diagnostics
    start = code_points(FIXTURE, trn101[0].range.start, client.encoding)
    end = code_points(FIXTURE, trn101[0].range.end, client.encoding)
    assert (start, end) == ((accumulate, 12), (accumulate, 30))  # the whole `total_loss += loss`
    assert trn101[0].source == "traindoctor"
    assert trn101[0].severity == lsp.DiagnosticSeverity.Warning
    assert "CUDA OOM" in trn101[0].message or "out of memory" in trn101[0].message.lower()
    # Every bug the engine finds is reported, at exactly its range, whatever the client's encoding.
    assert _got(client, FIXTURE, diagnostics) == _expected(FIXTURE, str(workspace / "train.py"))

    publish_caps = client.capabilities.text_document.publish_diagnostics
    if publish_caps.code_description_support:
        assert trn101[0].code_description.href.endswith("TRN101.md") or "TRN101" in trn101[0].code_description.href
    if publish_caps.related_information:
        related = {r.message: r.location.range.start.line for r in trn101[0].related_information}
        assert related, "where the loss comes from and where backward() is called"
        assert _line_of(FIXTURE, "loss.backward()") in related.values()
    else:
        assert trn101[0].related_information is None
        assert "backward()" in trn101[0].message  # the facts go into the message instead


async def test_positions_follow_the_negotiated_encoding(client, workspace: Path):
    # Astral-plane characters before the finding on the same line: 1 code point, 2 UTF-16
    # units, 4 UTF-8 bytes each. The range must point at the same characters in every encoding.
    accumulate = _line_of(FIXTURE, "total_loss += loss")
    lines = FIXTURE.splitlines(keepends=True)
    lines[accumulate] = lines[accumulate].replace("total_loss += loss", 'tag = "😋🔥"; total_loss += loss')
    text = "".join(lines)
    uri = client.open(workspace / "emoji.py", text)
    diagnostics = [d for d in await client.current_diagnostics(uri) if d.code == "TRN101"]
    assert len(diagnostics) == 1
    start = code_points(text, diagnostics[0].range.start, client.encoding)
    column = lines[accumulate].index("total_loss")
    assert start == (accumulate, column)
    assert diagnostics[0].range.start == position_of(text, text.index("total_loss += loss"), client.encoding)


async def test_edit_that_fixes_the_bug_clears_its_diagnostic(client, workspace: Path):
    uri = client.open(workspace / "train.py")
    assert any(d.code == "TRN101" for d in await client.current_diagnostics(uri))
    line = _line_of(FIXTURE, "total_loss += loss")
    end = FIXTURE.splitlines()[line].index("total_loss += loss") + len("total_loss += loss")
    client.edit(uri, lsp.Range(lsp.Position(line, end), lsp.Position(line, end)), ".item()")
    assert not any(d.code == "TRN101" for d in await client.current_diagnostics(uri))


async def test_burst_of_200_edits_ends_with_diagnostics_for_the_final_text(client, workspace: Path):
    uri = client.open(workspace / "train.py")
    await client.current_diagnostics(uri)
    line = _line_of(FIXTURE, "total_loss += loss")
    column = FIXTURE.splitlines()[line].index("total_loss += loss") + len("total_loss += loss")
    edits = 0

    def type_text(row: int, col: int, text: str) -> None:
        nonlocal edits
        for char in text:
            client.edit(uri, lsp.Range(lsp.Position(row, col), lsp.Position(row, col)), char)
            edits += 1
            if char == "\n":
                row, col = row + 1, 0
            else:
                col += 1

    type_text(line, column, ".item()")  # fixes the original bug
    new_bug = "\n            total_loss = total_loss + loss"  # and adds another one below it
    type_text(line, column + len(".item()"), new_bug)
    comment_line = _line_of(client.texts[uri], "def train(")
    comment = "  # " + "x" * (200 - edits - 4)
    type_text(comment_line, len(client.texts[uri].splitlines()[comment_line]), comment)
    assert edits == 200 and client.versions[uri] == 201

    final = client.texts[uri]
    diagnostics = await client.current_diagnostics(uri)
    assert _got(client, final, diagnostics) == _expected(final, str(workspace / "train.py"))
    trn101 = [d for d in diagnostics if d.code == "TRN101"]
    assert [d.range.start.line for d in trn101] == [line + 1], "only the new accumulation, on its new line"
    if not client.pulls:
        # Nothing older than the final text may be published after it.
        last = [p for p in client.published if p.uri == uri][-1]
        assert last.version == 201


async def test_close_clears_diagnostics(client, workspace: Path):
    uri = client.open(workspace / "train.py")
    assert await client.current_diagnostics(uri)
    if client.pulls:
        return  # a pulling client drops what it pulled by itself
    before = len(client.published)
    client.close(uri)
    assert await client.wait_for_publish(uri, lambda p: not p.diagnostics, after=before) == []


async def test_hover_on_a_flagged_range_explains_why_and_how_to_fix(client, workspace: Path):
    uri = client.open(workspace / "train.py")
    [trn101] = [d for d in await client.current_diagnostics(uri) if d.code == "TRN101"]
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), trn101.range.start)
    )
    assert hover is not None
    text = hover.contents.value
    assert "TRN101" in text and "Why" in text and "Fix" in text and ".item()" in text
    formats = client.capabilities.text_document.hover.content_format or []
    assert hover.contents.kind in formats
    nothing = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(0, 0))
    )
    assert nothing is None


async def test_bad_input_never_crashes_the_server(client, workspace: Path):
    cases = {
        "syntax.py": "import torch\ndef broken(:\n    total += loss\n",
        "binary.py": "torch\x00\x01\x02\udcff" * 100,
        "huge.py": "import torch\n" + "x = 1\n" * 500_000,
        "empty.py": "",
        "deep.py": "import torch\nx = " + "(" * 500 + "1" + ")" * 500 + "\n",
    }
    uris = {name: client.open(workspace / name, text) for name, text in cases.items()}
    for name, uri in uris.items():
        assert await client.current_diagnostics(uri) == [], name
    # Still alive and still linting.
    good = client.open(workspace / "train.py")
    assert any(d.code == "TRN101" for d in await client.current_diagnostics(good))
    # Typing into the broken file until it parses brings its findings back.
    broken = uris["syntax.py"]
    client.edit(broken, lsp.Range(lsp.Position(1, 11), lsp.Position(1, 12)), "")
    assert await client.current_diagnostics(broken) == []


async def test_debounce_coalesces_a_burst_into_one_lint(client, workspace: Path):
    client.set_configuration({"lintDelay": 400}, section="traindoctor")
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    uri = client.open(workspace / "train.py")
    await client.current_diagnostics(uri)
    await asyncio.sleep(0.3)  # the configuration round trip
    published = len(client.published)
    line = _line_of(FIXTURE, "def train(")
    for index in range(20):
        column = len(client.texts[uri].splitlines()[line])
        client.edit(uri, lsp.Range(lsp.Position(line, column), lsp.Position(line, column)), "#" if index == 0 else "x")
    diagnostics = await client.current_diagnostics(uri)
    assert "TRN101" in {d.code for d in diagnostics}
    if not client.pulls:
        await asyncio.sleep(0.6)  # nothing else may follow
        versions = [p.version for p in client.published[published:] if p.uri == uri]
        assert versions == [client.versions[uri]], versions


async def test_server_answers_while_a_long_lint_runs(client, workspace: Path):
    small = client.open(workspace / "train.py")
    [trn101] = [d for d in await client.current_diagnostics(small) if d.code == "TRN101"]
    # A long file: the fixture's training function, 60 times under new names (~1,000 lines).
    body = FIXTURE[FIXTURE.index("def train(") : FIXTURE.index('if __name__ == "__main__":')]
    big_text = FIXTURE + "\n\n".join(body.replace("def train(", f"def train_{i}(") for i in range(60))
    big = client.open(workspace / "big.py", big_text)
    big_diagnostics = asyncio.ensure_future(client.current_diagnostics(big))
    await asyncio.sleep(0.05)
    hover = await client.text_document_hover_async(lsp.HoverParams(lsp.TextDocumentIdentifier(small), trn101.range.start))
    assert hover is not None and "TRN101" in hover.contents.value
    assert not big_diagnostics.done(), "the hover waited for the long lint"
    diagnostics = await big_diagnostics
    assert len([d for d in diagnostics if d.code == "TRN101"]) == 61


async def test_crlf_and_untitled_documents(client, workspace: Path):
    crlf = client.open(workspace / "crlf.py", FIXTURE.replace("\n", "\r\n"))
    untitled = "untitled:Untitled-1"
    client.texts[untitled], client.versions[untitled] = FIXTURE, 1
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri=untitled, language_id="python", version=1, text=FIXTURE))
    )
    expected = _expected(FIXTURE, "x.py")
    assert _got(client, FIXTURE, await client.current_diagnostics(crlf)) == expected
    assert _got(client, FIXTURE, await client.current_diagnostics(untitled)) == expected


async def test_one_bce_loss_object_is_one_diagnostic_with_its_calls_related(client, workspace: Path):
    """TRN407 on a GAN: one nn.BCELoss() called at three places is one diagnostic."""
    source = (Path(__file__).parents[1] / "lint" / "gan_bce_fixture.py").read_text(encoding="utf-8")
    (workspace / "gan.py").write_text(source, encoding="utf-8")
    uri = client.open(workspace / "gan.py")
    diagnostics = [d for d in await client.current_diagnostics(uri) if d.code == "TRN407"]
    assert [d.range.start.line for d in diagnostics] == [
        _line_of(source, "# first call of adversarial_loss"), _line_of(source, "# first call of auxiliary_loss")]
    if client.capabilities.text_document.publish_diagnostics.related_information:
        related = sorted(r.location.range.start.line for r in diagnostics[0].related_information)
        assert related == sorted([_line_of(source, "adversarial_loss = torch.nn.BCELoss()"),
                                  _line_of(source, "real_loss = adversarial_loss("),
                                  _line_of(source, "fake_loss = adversarial_loss(")])
        assert all(r.location.uri == uri for r in diagnostics[0].related_information)
