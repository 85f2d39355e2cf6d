"""Attach static-lint findings that explain a diagnosed failure.

For every user frame whose file exists locally, the file is linted once and the
findings whose code starts with one of the signature's `related_rules`
prefixes (OOM <-> TRN1xx, nan-inf <-> TRN4xx, device-side assert <-> TRN301,
nondeterminism <-> TRN2xx) are returned, findings on a line of the stack first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..model import Finding, Frame


@dataclass(frozen=True)
class Correlation:
    finding: Finding
    on_stack: bool  # the finding's range covers a line of the traceback


def resolve(path: str, base_dir: Path) -> Path | None:
    """The local file a frame names, or None (Jupyter cells, other machines)."""
    if not path or path.startswith("<") or path.startswith(("Cell In", "Input In")):
        return None
    try:
        candidate = Path(path).expanduser()
        if not candidate.is_absolute():
            candidate = base_dir / candidate
        if candidate.is_file():
            return candidate
        # A log from another machine (or a container) names absolute paths that
        # do not exist here: try its trailing components under base_dir, longest first.
        parts = [p for p in re.split(r"[/\\]", path) if p and not p.endswith(":")]
        for count in range(min(len(parts) - 1, 6), 0, -1):
            local = base_dir.joinpath(*parts[-count:])
            if local.is_file():
                return local
    except (OSError, ValueError):
        return None
    return None


def correlate(frames: tuple[Frame, ...], prefixes: tuple[str, ...], base_dir: Path) -> list[Correlation]:
    if not prefixes:
        return []
    from ..lint import lint_file  # imported late: diagnosis without correlation must not need libcst

    lines_by_file: dict[Path, set[int]] = {}
    for frame in frames:
        if frame.is_user:
            local = resolve(frame.path, base_dir)
            if local is not None:
                lines_by_file.setdefault(local, set()).add(frame.line - 1)
    out: list[Correlation] = []
    for local, stack_lines in lines_by_file.items():
        try:
            result = lint_file(local)
        except Exception:  # a lint bug must not hide the diagnosis
            continue
        for finding in result.findings:
            if finding.code.startswith(prefixes):
                on_stack = any(finding.range.contains_line(line) for line in stack_lines)
                out.append(Correlation(finding, on_stack))
    out.sort(key=lambda c: (not c.on_stack, c.finding.path, c.finding.range.start))
    return out
