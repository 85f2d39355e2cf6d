"""Code actions over LSP: apply what the server returns, as the editor would, and check the result."""

from __future__ import annotations

import ast
from pathlib import Path

from lsp_helpers import FIXTURES
from lsprotocol import types as lsp

FIXTURE = (FIXTURES / "train_buggy.py").read_text(encoding="utf-8")
FIX_ALL = "source.fixAll.traindoctor"


async def _trn101(client, uri: str) -> lsp.Diagnostic:
    [diagnostic] = [d for d in await client.current_diagnostics(uri) if d.code == "TRN101"]
    return diagnostic


def _lazy(client) -> bool:
    caps = client.capabilities.text_document.code_action
    return bool(caps.resolve_support and "edit" in caps.resolve_support.properties and caps.data_support)


async def test_quick_fix_removes_the_diagnostic_and_the_code_still_parses(client, workspace: Path):
    uri = client.open(workspace / "train.py")
    diagnostic = await _trn101(client, uri)
    actions = await client.code_actions(uri, diagnostic.range, [diagnostic])
    quick_fixes = [a for a in actions if a.kind == lsp.CodeActionKind.QuickFix and a.title.startswith("Accumulate")]
    assert len(quick_fixes) == 1, [a.title for a in actions]
    fix = quick_fixes[0]
    assert fix.diagnostics and fix.diagnostics[0].code == "TRN101"
    if client.capabilities.text_document.code_action.is_preferred_support:
        assert fix.is_preferred is True
    # Lazy resolution where the client supports it: the list itself carries no edit.
    assert (fix.edit is None) == _lazy(client)

    client.apply_workspace_edit((await client.resolved(fix)).edit)
    text = client.texts[uri]
    assert "total_loss += loss.item()" in text
    ast.parse(text)
    assert not [d for d in await client.current_diagnostics(uri) if d.code == "TRN101"]


async def test_ignore_action_adds_the_suppression_comment(client, workspace: Path):
    uri = client.open(workspace / "train.py")
    diagnostic = await _trn101(client, uri)
    actions = await client.code_actions(uri, diagnostic.range, [diagnostic])
    [ignore] = [a for a in actions if a.title == "Ignore TRN101 on this line"]
    assert ignore.kind == lsp.CodeActionKind.QuickFix and not ignore.is_preferred
    client.apply_workspace_edit((await client.resolved(ignore)).edit)
    text = client.texts[uri]
    line = text.splitlines()[diagnostic.range.start.line]
    assert line.endswith("total_loss += loss  # traindoctor: ignore[TRN101]")
    ast.parse(text)
    assert not [d for d in await client.current_diagnostics(uri) if d.code == "TRN101"]


async def test_fix_all_applies_every_safe_fix_at_once(client, workspace: Path):
    # Two accumulations in two loops plus the fixture's own.
    extra = (
        "\n\ndef evaluate(model, loader, criterion):\n"
        "    losses = []\n"
        "    for x, y in loader:\n"
        "        loss = criterion(model(x), y)\n"
        "        loss.backward()\n"
        "        losses.append(loss)\n"
        "    return losses\n"
    )
    text = FIXTURE + extra
    uri = client.open(workspace / "two.py", text)
    before = [d for d in await client.current_diagnostics(uri) if d.code == "TRN101"]
    assert len(before) == 2
    whole = lsp.Range(lsp.Position(0, 0), lsp.Position(len(text.splitlines()), 0))
    actions = await client.code_actions(uri, whole, only=[lsp.CodeActionKind.SourceFixAll])
    assert [a.kind for a in actions] == [FIX_ALL]
    client.apply_workspace_edit((await client.resolved(actions[0])).edit)
    fixed = client.texts[uri]
    ast.parse(fixed)
    assert "total_loss += loss.item()" in fixed
    assert "losses.append(loss.detach())" in fixed or "losses.append(loss.item())" in fixed
    assert not [d for d in await client.current_diagnostics(uri) if d.code == "TRN101"]
    # Nothing left to fix: no fixAll action either.
    assert await client.code_actions(uri, whole, only=[lsp.CodeActionKind.SourceFixAll]) == []


async def test_actions_are_filtered_by_kind_and_range(client, workspace: Path):
    uri = client.open(workspace / "train.py")
    diagnostic = await _trn101(client, uri)
    only_quickfix = await client.code_actions(uri, diagnostic.range, [diagnostic], only=[lsp.CodeActionKind.QuickFix])
    assert only_quickfix and all(a.kind == lsp.CodeActionKind.QuickFix for a in only_quickfix)
    elsewhere = lsp.Range(lsp.Position(0, 0), lsp.Position(0, 3))
    assert await client.code_actions(uri, elsewhere, only=[lsp.CodeActionKind.QuickFix]) == []


async def test_resolve_after_the_text_moved_on_does_not_corrupt_it(client, workspace: Path):
    if not _lazy(client):
        return  # edits come with the list: nothing is resolved later
    uri = client.open(workspace / "train.py")
    diagnostic = await _trn101(client, uri)
    [fix] = [a for a in await client.code_actions(uri, diagnostic.range, [diagnostic]) if a.title.startswith("Accumulate")]
    client.edit(uri, lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), "# moved\n")
    resolved = await client.code_action_resolve_async(fix)
    if resolved.edit is not None:  # only an edit for the current text is acceptable
        client.apply_workspace_edit(resolved.edit)
    ast.parse(client.texts[uri])
    assert "total_loss += loss" in client.texts[uri]


# One fix of each applicability (as in Ruff): rewriting the inline `log(softmax(x))` is
# safe; turning a named `BCELoss` criterion into `BCEWithLogitsLoss` is unsafe (it may also
# be called on real probabilities elsewhere).
SAFE_AND_UNSAFE = """import torch
import torch.nn as nn
import torch.nn.functional as F


def train(model, loader, optimizer):
    criterion = nn.BCELoss()
    for x, y in loader:
        optimizer.zero_grad()
        logits = model(x)
        logp = torch.log(F.softmax(logits, dim=-1))
        loss = criterion(torch.sigmoid(logits), y) - logp.mean()
        loss.backward()
        optimizer.step()
"""


async def _fixes_on_line(client, uri: str, line: int) -> list[lsp.CodeAction]:
    [diagnostic] = [d for d in await client.current_diagnostics(uri) if d.range.start.line == line]
    actions = await client.code_actions(uri, diagnostic.range, [diagnostic], only=[lsp.CodeActionKind.QuickFix])
    return [a for a in actions if not a.title.startswith("Ignore")]


async def test_only_safe_fixes_are_preferred_and_unsafe_ones_stay_available(client, workspace: Path):
    uri = client.open(workspace / "probs.py", SAFE_AND_UNSAFE)
    [safe] = await _fixes_on_line(client, uri, 10)
    [unsafe] = await _fixes_on_line(client, uri, 11)
    assert unsafe.title == "Use BCEWithLogitsLoss on the logits"
    assert not unsafe.is_preferred
    if client.capabilities.text_document.code_action.is_preferred_support:
        assert safe.is_preferred is True
    client.apply_workspace_edit((await client.resolved(unsafe)).edit)
    assert "criterion = nn.BCEWithLogitsLoss()" in client.texts[uri]
    ast.parse(client.texts[uri])


async def test_fix_all_leaves_the_unsafe_fixes_alone(client, workspace: Path):
    uri = client.open(workspace / "probs.py", SAFE_AND_UNSAFE)
    assert len(await client.current_diagnostics(uri)) == 2
    whole = lsp.Range(lsp.Position(0, 0), lsp.Position(len(SAFE_AND_UNSAFE.splitlines()), 0))
    [fix_all] = await client.code_actions(uri, whole, only=[lsp.CodeActionKind.SourceFixAll])
    client.apply_workspace_edit((await client.resolved(fix_all)).edit)
    fixed = client.texts[uri]
    assert "logp = F.log_softmax(logits, dim=-1)" in fixed
    assert "criterion = nn.BCELoss()" in fixed
    [left] = await client.current_diagnostics(uri)
    assert left.range.start.line == 11
    # Only an unsafe fix is left: no fixAll, which would do nothing.
    assert await client.code_actions(uri, whole, only=[lsp.CodeActionKind.SourceFixAll]) == []
