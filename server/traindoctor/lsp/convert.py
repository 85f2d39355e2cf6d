"""Model values (code-point positions) -> lsprotocol types in the negotiated encoding.

Positions are converted against the lines of the exact text the engine linted (a
snapshot), never against the live document, which may have moved on since.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Sequence

from lsprotocol import types as lsp
from pygls.capabilities import get_capability
from pygls.workspace.position_codec import PositionCodec

from .. import catalog
from ..config import Config
from ..model import Finding, Range, RelatedLocation, Severity, TextEdit

SOURCE = "traindoctor"

_SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.INFO: lsp.DiagnosticSeverity.Information,
    Severity.HINT: lsp.DiagnosticSeverity.Hint,
}
# Python (and libcst, and LSP) end lines at \n, \r\n or \r only; str.splitlines()
# also splits on \f, \x1c, \u2028..., which would shift every line after them.
_LINE_END = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """Lines with their endings kept, split the way Python and LSP count lines."""
    lines, start = [], 0
    for match in _LINE_END.finditer(text):
        lines.append(text[start : match.end()])
        start = match.end()
    lines.append(text[start:])
    return lines


@dataclass(frozen=True)
class ClientFeatures:
    """What the client said it supports, read once at initialize."""

    related_information: bool = True
    code_description: bool = True
    markdown_hover: bool = True
    is_preferred: bool = True
    resolve_edit: bool = False
    document_changes: bool = False
    pull_diagnostics: bool = False
    diagnostic_refresh: bool = False
    configuration: bool = False
    work_done_progress: bool = False
    watch_files: bool = False  # dynamic registration of workspace/didChangeWatchedFiles

    @classmethod
    def of(cls, caps: lsp.ClientCapabilities) -> "ClientFeatures":
        def cap(path: str, default=None):
            return get_capability(caps, path, default)

        resolve_props = cap("text_document.code_action.resolve_support.properties", []) or []
        return cls(
            related_information=bool(cap("text_document.publish_diagnostics.related_information", False)),
            code_description=bool(cap("text_document.publish_diagnostics.code_description_support", False)),
            markdown_hover=lsp.MarkupKind.Markdown in (cap("text_document.hover.content_format", []) or []),
            is_preferred=bool(cap("text_document.code_action.is_preferred_support", False)),
            resolve_edit="edit" in resolve_props and bool(cap("text_document.code_action.data_support", False)),
            document_changes=bool(cap("workspace.workspace_edit.document_changes", False)),
            pull_diagnostics=cap("text_document.diagnostic", None) is not None,
            diagnostic_refresh=bool(cap("workspace.diagnostics.refresh_support", False)),
            configuration=bool(cap("workspace.configuration", False)),
            work_done_progress=bool(cap("window.work_done_progress", False)),
            watch_files=bool(cap("workspace.did_change_watched_files.dynamic_registration", False)),
        )


class Converter:
    """Converts positions of one text snapshot into the client's encoding."""

    def __init__(self, text: str, codec: PositionCodec):
        self.lines = split_lines(text)
        self.codec = codec

    def position(self, line: int, column: int) -> lsp.Position:
        if line >= len(self.lines):
            last = len(self.lines) - 1
            return lsp.Position(last, self.codec.client_num_units(_strip_eol(self.lines[last])))
        text = _strip_eol(self.lines[line])
        column = max(0, min(column, len(text)))
        return lsp.Position(line, self.codec.client_num_units(text[:column]))

    def range(self, rng: Range) -> lsp.Range:
        return lsp.Range(
            start=self.position(rng.start.line, rng.start.column),
            end=self.position(rng.end.line, rng.end.column),
        )

    def model_position(self, pos: lsp.Position) -> tuple[int, int]:
        """A client position -> (line, code-point column) in this snapshot."""
        if pos.line >= len(self.lines):
            return len(self.lines) - 1, len(_strip_eol(self.lines[-1]))
        text = _strip_eol(self.lines[pos.line])
        units = 0
        for index, char in enumerate(text):
            if units >= pos.character:
                return pos.line, index
            units += self.codec.client_num_units(char)
        return pos.line, len(text)

    def text_edit(self, edit: TextEdit) -> lsp.TextEdit:
        return lsp.TextEdit(range=self.range(edit.range), new_text=edit.new_text)


def _strip_eol(line: str) -> str:
    return line.rstrip("\r\n")


@functools.lru_cache(maxsize=256)
def rule_doc_url(code: str) -> str | None:
    try:
        info = catalog.get_rule(code)
    except catalog.CatalogError:
        return None
    return info.doc_url if info else None


def diagnostic(finding: Finding, conv: Converter, uri: str, config: Config, client: ClientFeatures) -> lsp.Diagnostic:
    severity = config.severity_for(finding.code, finding.severity)
    message = finding.message
    related = None
    if finding.related:
        if client.related_information:
            related = [_related(r, conv, uri) for r in finding.related]
        else:
            # Clients that cannot show related locations still get the facts.
            message += "".join(f"\n{r.message} (line {r.range.start.line + 1})" for r in finding.related)
    href = rule_doc_url(finding.code) if client.code_description else None
    return lsp.Diagnostic(
        range=conv.range(finding.range),
        message=message,
        severity=_SEVERITY.get(severity, lsp.DiagnosticSeverity.Warning),
        code=finding.code,
        code_description=lsp.CodeDescription(href=href) if href else None,
        source=SOURCE,
        related_information=related,
    )


def _related(rel: RelatedLocation, conv: Converter, uri: str) -> lsp.DiagnosticRelatedInformation:
    if rel.path is None:
        target_uri, rng = uri, conv.range(rel.range)
    else:
        from pygls.uris import from_fs_path

        # Another file: its text is not at hand, so columns are passed through.
        target_uri = from_fs_path(rel.path) or rel.path
        rng = lsp.Range(
            lsp.Position(rel.range.start.line, rel.range.start.column),
            lsp.Position(rel.range.end.line, rel.range.end.column),
        )
    return lsp.DiagnosticRelatedInformation(location=lsp.Location(uri=target_uri, range=rng), message=rel.message)


def ranges_overlap(a: lsp.Range, b: lsp.Range) -> bool:
    def key(p: lsp.Position) -> tuple[int, int]:
        return p.line, p.character

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def whole_text_edit(old: str, new: str, codec: PositionCodec) -> list[lsp.TextEdit]:
    """One edit covering only the lines that differ (keeps cursors and folds elsewhere)."""
    if old == new:
        return []
    old_lines, new_lines = split_lines(old), split_lines(new)
    prefix = 0
    while prefix < min(len(old_lines), len(new_lines)) - 1 and old_lines[prefix] == new_lines[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(old_lines), len(new_lines)) - prefix - 1
        and old_lines[len(old_lines) - 1 - suffix] == new_lines[len(new_lines) - 1 - suffix]
    ):
        suffix += 1
    conv = Converter(old, codec)
    start = lsp.Position(prefix, 0)
    end_line = len(old_lines) - suffix  # first untouched line (exclusive end)
    end = lsp.Position(end_line, 0) if end_line < len(old_lines) else conv.position(len(old_lines) - 1, 10**9)
    replacement = "".join(new_lines[prefix : len(new_lines) - suffix])
    return [lsp.TextEdit(range=lsp.Range(start, end), new_text=replacement)]


def text_edits(edits: Sequence[TextEdit], conv: Converter) -> list[lsp.TextEdit]:
    return [conv.text_edit(e) for e in edits]
