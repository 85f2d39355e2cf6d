"""Hover on a flagged range: the rule's message, why it breaks training and how to fix it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from .. import catalog

if TYPE_CHECKING:
    from .convert import ClientFeatures
    from .documents import LintSnapshot


def _contains(rng: lsp.Range, pos: lsp.Position) -> bool:
    return (rng.start.line, rng.start.character) <= (pos.line, pos.character) <= (rng.end.line, rng.end.character)


def hover(snapshot: "LintSnapshot", position: lsp.Position, client: "ClientFeatures") -> lsp.Hover | None:
    hits = [(f, d) for f, d in zip(snapshot.findings, snapshot.diagnostics) if _contains(d.range, position)]
    if not hits:
        return None
    markdown = client.markdown_hover
    sections = []
    for finding, diag in hits:
        try:
            info = catalog.get_rule(finding.code)
        except catalog.CatalogError:
            info = None
        sections.append(_describe(finding, info, markdown))
    separator = "\n\n---\n\n" if markdown else "\n\n"
    first = hits[0][1].range
    return lsp.Hover(
        contents=lsp.MarkupContent(
            kind=lsp.MarkupKind.Markdown if markdown else lsp.MarkupKind.PlainText,
            value=separator.join(sections),
        ),
        range=first,
    )


def _describe(finding, info, markdown: bool) -> str:
    if markdown:
        lines = [f"**{finding.code}** `{finding.name}`: {finding.message}"]
        if info is not None:
            lines += ["", f"**Why:** {info.why}", "", f"**Fix:** {info.fix}", "", f"[Rule documentation]({info.doc_url})"]
        return "\n".join(lines)
    lines = [f"{finding.code} ({finding.name}): {finding.message}"]
    if info is not None:
        lines += ["", f"Why: {info.why}", "", f"Fix: {info.fix}", "", f"Documentation: {info.doc_url}"]
    return "\n".join(lines)
