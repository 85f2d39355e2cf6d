"""Code actions: a quick fix per finding with a fix, "Ignore CODE on this line" for
every finding, and `source.fixAll.traindoctor`. When the client can resolve code
actions lazily, the list carries no edits (cheap to show on every cursor move) and
`codeAction/resolve` computes the edit of the one the user picks.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from ..lint import suppression_edit
from ..model import Finding, Position, Range
from .convert import ranges_overlap, text_edits, whole_text_edit
from .notebooks import fixed_text

if TYPE_CHECKING:
    from .documents import DocumentState, LintSnapshot
    from .host import Host

logger = logging.getLogger(__name__)

FIX_ALL_KIND = "source.fixAll.traindoctor"
_FIX, _IGNORE, _FIX_ALL = "fix", "ignore", "fixAll"


def _wanted(kind: str, only: list[str] | None) -> bool:
    """`only` holds kind prefixes: "source" asks for "source.fixAll.traindoctor" too."""
    if not only:
        return True
    return any(kind == o or kind.startswith(o + ".") for o in only)


def _range_key(rng: Range) -> list[int]:
    return [rng.start.line, rng.start.column, rng.end.line, rng.end.column]


def _range_of(key: list[int]) -> Range:
    return Range(Position(key[0], key[1]), Position(key[2], key[3]))


async def code_actions(
    ls: "Host", doc: "DocumentState", snapshot: "LintSnapshot", params: lsp.CodeActionParams
) -> list[lsp.CodeAction]:
    only = [str(k) for k in params.context.only] if params.context.only else None
    out: list[lsp.CodeAction] = []
    if _wanted(lsp.CodeActionKind.QuickFix, only):
        for finding, diag in zip(snapshot.findings, snapshot.diagnostics):
            if not ranges_overlap(diag.range, params.range):
                continue
            if finding.fix is not None:
                out.append(_action(ls, doc, snapshot, finding, diag, _FIX))
            action = _action(ls, doc, snapshot, finding, diag, _IGNORE)
            if action is not None:
                out.append(action)
    explicit_fix_all = bool(only) and _wanted(FIX_ALL_KIND, only)
    has_safe_fix = any(f.fix is not None and f.fix.safe for f in snapshot.findings)
    if has_safe_fix and (explicit_fix_all or (only is None and out)):
        fix_all = await _fix_all_action(ls, doc, snapshot)
        if fix_all is not None:
            out.append(fix_all)
    return [a for a in out if a is not None]


def _data(doc: "DocumentState", snapshot: "LintSnapshot", action: str, finding: Finding | None) -> dict[str, Any]:
    data: dict[str, Any] = {"uri": doc.uri, "generation": snapshot.generation, "action": action}
    if finding is not None:
        data["code"] = finding.code
        data["range"] = _range_key(finding.range)
    return data


def _action(ls, doc, snapshot, finding: Finding, diag: lsp.Diagnostic, action: str) -> lsp.CodeAction | None:
    if action == _FIX:
        assert finding.fix is not None
        title = finding.fix.title
        preferred = finding.fix.safe
    else:
        title = f"Ignore {finding.code} on this line"
        preferred = False
    code_action = lsp.CodeAction(
        title=title,
        kind=lsp.CodeActionKind.QuickFix,
        diagnostics=[diag],
        is_preferred=preferred if ls.client.is_preferred and preferred else None,
    )
    if ls.client.resolve_edit:
        code_action.data = _data(doc, snapshot, action, finding)
        return code_action
    edit = _finding_edit(ls, doc, snapshot, finding, action)
    if edit is None:
        return None
    code_action.edit = edit
    return code_action


def _finding_edit(ls, doc, snapshot, finding: Finding, action: str) -> lsp.WorkspaceEdit | None:
    if action == _FIX:
        if finding.fix is None:
            return None
        edits = text_edits(finding.fix.edits, snapshot.converter)
    else:
        try:
            edits = text_edits([suppression_edit(snapshot.text, finding)], snapshot.converter)
        except (ValueError, NotImplementedError) as exc:
            logger.warning("no suppression edit for %s: %s", finding.code, exc)
            return None
    return workspace_edit(ls, doc.uri, snapshot.version, edits)


def workspace_edit(ls, uri: str, version: int | None, edits: list[lsp.TextEdit]) -> lsp.WorkspaceEdit:
    if ls.client.document_changes:
        return lsp.WorkspaceEdit(
            document_changes=[
                lsp.TextDocumentEdit(
                    text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                    edits=edits,
                )
            ]
        )
    return lsp.WorkspaceEdit(changes={uri: edits})


async def _fix_all_action(ls, doc, snapshot) -> lsp.CodeAction | None:
    action = lsp.CodeAction(title="Fix all traindoctor problems that have a safe fix", kind=FIX_ALL_KIND)
    if ls.client.resolve_edit:
        action.data = _data(doc, snapshot, _FIX_ALL, None)
        return action
    action.edit = await _fix_all_edit(ls, doc, snapshot)
    return action if action.edit is not None else None


async def _fix_all_edit(ls, doc, snapshot) -> lsp.WorkspaceEdit | None:
    loop = asyncio.get_running_loop()
    try:
        fixed = await loop.run_in_executor(ls.engine_pool, fixed_text, doc, snapshot)
    except Exception as exc:  # never let a fix crash the request
        logger.exception("fixAll failed for %s", doc.uri)
        ls.log(f"fixAll failed: {type(exc).__name__}: {exc}", lsp.MessageType.Error)
        return None
    edits = whole_text_edit(snapshot.text, fixed, ls.workspace.position_codec)
    return workspace_edit(ls, doc.uri, snapshot.version, edits)


async def resolve(ls: "Host", action: lsp.CodeAction) -> lsp.CodeAction:
    data = action.data if isinstance(action.data, dict) else None
    if data is None or action.edit is not None:
        return action
    doc = ls.documents.get(str(data.get("uri")))
    if doc is None:
        return action
    snapshot = await ls.current_snapshot(doc)
    kind = data.get("action")
    if kind == _FIX_ALL:
        action.edit = await _fix_all_edit(ls, doc, snapshot)
        return action
    try:
        wanted_range = _range_of([int(v) for v in data.get("range", [])])
    except (TypeError, ValueError, IndexError):
        return action
    # The text may have changed since the list was computed: only an identical
    # finding in the current text gets an edit, else the action does nothing.
    finding = next(
        (f for f in snapshot.findings if f.code == data.get("code") and f.range == wanted_range), None
    )
    if finding is not None and kind in (_FIX, _IGNORE):
        action.edit = _finding_edit(ls, doc, snapshot, finding, kind)
    return action
