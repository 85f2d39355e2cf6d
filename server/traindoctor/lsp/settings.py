"""Editor settings (section `traindoctor`) and how they combine with pyproject config.

The client sends them through `workspace/configuration`, the `settings` payload of
`workspace/didChangeConfiguration`, or `initializationOptions`. Values of the wrong
type are dropped one by one (and reported), so a typo in one setting never turns
the others off.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import Config, ConfigError, load_config
from ..model import Severity

logger = logging.getLogger(__name__)

SECTION = "traindoctor"
DEFAULT_LINT_DELAY_MS = 150
_LEVELS = {s.value for s in Severity}


@dataclass(frozen=True)
class EditorSettings:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severity: tuple[tuple[str, str], ...] = ()
    lint_on_change: bool | None = None  # None: whatever pyproject says (default on)
    lint_delay_ms: int = DEFAULT_LINT_DELAY_MS  # debounce after the last keystroke
    index_workspace: bool = True  # build the project index of the workspace folders in the background
    problems: tuple[str, ...] = field(default=(), compare=False)  # settings that were dropped

    @classmethod
    def parse(cls, raw: Any) -> "EditorSettings":
        if not isinstance(raw, dict):
            return cls()
        problems: list[str] = []

        def str_list(key: str) -> tuple[str, ...]:
            value = raw.get(key)
            if value is None:
                return ()
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                problems.append(f"{SECTION}.{key} must be a list of strings")
                return ()
            return tuple(v for v in value if v.strip())

        severity: list[tuple[str, str]] = []
        raw_severity = raw.get("severity")
        if isinstance(raw_severity, dict):
            for code, level in raw_severity.items():
                if isinstance(level, str) and level.lower() in _LEVELS:
                    severity.append((str(code).upper(), level.lower()))
                else:
                    problems.append(f"{SECTION}.severity.{code}: {level!r} is not one of {', '.join(sorted(_LEVELS))}")
        elif raw_severity is not None:
            problems.append(f"{SECTION}.severity must be an object of code -> level")

        lint_on_change = raw.get("lintOnChange")
        if lint_on_change is not None and not isinstance(lint_on_change, bool):
            problems.append(f"{SECTION}.lintOnChange must be true or false")
            lint_on_change = None

        delay = raw.get("lintDelay", DEFAULT_LINT_DELAY_MS)
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0 <= delay <= 60_000:
            problems.append(f"{SECTION}.lintDelay must be a number of milliseconds between 0 and 60000")
            delay = DEFAULT_LINT_DELAY_MS

        index_workspace = raw.get("indexWorkspace", True)
        if not isinstance(index_workspace, bool):
            problems.append(f"{SECTION}.indexWorkspace must be true or false")
            index_workspace = True

        return cls(
            index_workspace=index_workspace,
            select=str_list("select"),
            ignore=str_list("ignore"),
            severity=tuple(severity),
            lint_on_change=lint_on_change,
            lint_delay_ms=int(delay),
            problems=tuple(problems),
        )

    def config_for(self, path: str | None, fallback_dir: str | None = None) -> tuple[Config, str | None]:
        """The effective Config for a file: nearest pyproject `[tool.traindoctor]`,
        then these settings on top. Returns (config, problem with pyproject or None)."""
        anchor = path if path and Path(path).is_absolute() else fallback_dir
        problem = None
        try:
            base = load_config(anchor) if anchor else Config()
        except (ConfigError, OSError) as exc:
            base, problem = Config(), str(exc)
        config = base.with_overrides(
            select=self.select or None,
            ignore=self.ignore or None,
            severity=dict(self.severity) or None,
            lint_on_change=self.lint_on_change,
        )
        return config, problem
