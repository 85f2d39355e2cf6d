"""Diagnosis -> short readable text: title, `path:line`, root cause, numbered fixes."""

from __future__ import annotations

import textwrap

from ..model import Diagnosis


def render_text(diagnosis: Diagnosis, *, width: int = 100, evidence: bool = True) -> str:
    out = [f"{diagnosis.title}  [{diagnosis.kind}, confidence {diagnosis.confidence:.2f}]"]
    if diagnosis.location is not None:
        loc = diagnosis.location
        out.append(f"  at {loc.path}:{loc.line} in {loc.function}")
        if loc.code:
            out.append(f"     {loc.code}")
    if diagnosis.rank is not None:
        out.append(f"  rank {diagnosis.rank}")
    out.append("")
    out.extend(textwrap.wrap(diagnosis.root_cause, width) or [""])
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
            for line in fix.detail.splitlines():  # code fixes keep their lines
                out.extend(textwrap.wrap(line, width, initial_indent="     ", subsequent_indent="     ",
                                         drop_whitespace=False) or ["     "])
    if len(diagnosis.hypotheses) > 1:
        out.append("")
        out.append("Other explanations:")
        for hypothesis in diagnosis.hypotheses[1:]:
            out.extend(textwrap.wrap(f"[{hypothesis.kind}, {hypothesis.confidence:.2f}] {hypothesis.cause}", width,
                                     initial_indent="  - ", subsequent_indent="    "))
    return "\n".join(out) + "\n"
