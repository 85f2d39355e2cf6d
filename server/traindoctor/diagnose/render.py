"""Diagnosis -> short readable text: title, `path:line`, the cause line, root cause, numbered fixes,
other explanations, references."""

from __future__ import annotations

import textwrap
from pathlib import Path

from ..lint.diff import unified_diff
from ..model import Diagnosis, Finding


def fix_diff(finding: Finding) -> str:
    """The unified diff of a lint finding's fix on its file ("" when there is none)."""
    if finding.fix is None or not finding.fix.edits:
        return ""
    try:
        source = Path(finding.path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
    from ..lint.api import apply_edits

    fixed = apply_edits(source, finding.fix.edits)
    return unified_diff(source.splitlines(keepends=True), fixed.splitlines(keepends=True), finding.path, context=2)


def render_text(diagnosis: Diagnosis, *, width: int = 100, evidence: bool = True) -> str:
    out = [f"{diagnosis.title}  [{diagnosis.kind}, confidence {diagnosis.confidence:.2f}]"]
    if diagnosis.location is not None:
        loc = diagnosis.location
        out.append(f"  at {loc.path}:{loc.line} in {loc.function}")
        if loc.code:
            out.append(f"     {loc.code}")
    cause = diagnosis.cause_location
    if cause:
        out.append(f"  cause at {cause.get('path')}:{cause.get('line')}" + (f": {cause['code']}" if cause.get("code") else ""))
        out.extend(textwrap.wrap(str(cause.get("why") or ""), width, initial_indent="     ", subsequent_indent="     "))
    if diagnosis.rank is not None:
        out.append(f"  rank {diagnosis.rank}")
    out.append("")
    out.extend(textwrap.wrap(diagnosis.root_cause, width) or [""])
    check = diagnosis.hypotheses[0].check if diagnosis.hypotheses else ""
    if check and check not in diagnosis.root_cause and diagnosis.kind != "other":
        out.extend(textwrap.wrap(f"To decide: {check}", width))
    ranks = diagnosis.details.get("ranks") if isinstance(diagnosis.details, dict) else None
    if ranks and len(ranks) > 1:
        out.append("")
        out.append("Ranks:")
        out.extend(f"  {r}: {note}" for r, note in ranks.items())
    if evidence and diagnosis.evidence:
        out.append("")
        out.append("Evidence:")
        out.extend(f"  - {textwrap.shorten(e, width * 2, placeholder=' ...')}" for e in diagnosis.evidence[:8])
    if diagnosis.fixes:
        out.append("")
        out.append("Fixes:")
        for number, fix in enumerate(diagnosis.fixes, 1):
            out.append(f"  {number}. {fix.title}")
            if fix.location:
                out.append(f"     at {fix.location['path']}:{fix.location['line']}")
            for line in fix.detail.splitlines():  # code fixes keep their lines
                out.extend(textwrap.wrap(line, width, initial_indent="     ", subsequent_indent="     ",
                                         drop_whitespace=False) or ["     "])
    fixable = next((f for f in diagnosis.related_findings if f.fix is not None), None)
    diff = fix_diff(fixable) if fixable is not None else ""
    if diff:
        out.append("")
        out.append(f"Fix to apply ({fixable.code}: {fixable.fix.title}; `traindoctor check --fix` applies it):")
        out.extend("  " + line for line in diff.rstrip("\n").splitlines())
    if len(diagnosis.hypotheses) > 1:
        out.append("")
        out.append("Other explanations:")
        for hypothesis in diagnosis.hypotheses[1:]:
            out.extend(textwrap.wrap(f"[{hypothesis.kind}, {hypothesis.confidence:.2f}] {hypothesis.cause}", width,
                                     initial_indent="  - ", subsequent_indent="    "))
            if hypothesis.check and hypothesis.kind != diagnosis.kind:
                out.extend(textwrap.wrap(f"to decide: {hypothesis.check}", width, initial_indent="    ",
                                         subsequent_indent="    "))
    if diagnosis.references:
        out.append("")
        out.append("References:")
        for ref in diagnosis.references[:6]:
            out.append(f"  - {ref.get('title')}: {ref.get('url')}")
    return "\n".join(out) + "\n"
