"""PLACEHOLDER: the lead is writing the real engine behind this exact API."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..config import Config
from ..model import Finding, TextEdit


@dataclass(frozen=True)
class LintResult:
    path: str
    findings: tuple[Finding, ...] = ()
    error: str | None = None  # why the file could not be linted, one line


class LintCache:
    """Per-document cache; reuse one instance per open document."""


def lint_source(source: str, path: str = "<string>", config: Config | None = None,
                cache: LintCache | None = None) -> LintResult:
    return LintResult(path)


def lint_file(path: str | Path, config: Config | None = None) -> LintResult:
    return LintResult(str(path))


def apply_fixes(source: str, findings: Iterable[Finding], *, safe_only: bool = True) -> str:
    return source


def fix_source(source: str, path: str = "<string>", config: Config | None = None) -> tuple[str, int]:
    return source, 0


def suppression_edit(source: str, finding: Finding) -> TextEdit:
    raise NotImplementedError
