"""`[tool.traindoctor]` configuration, found by walking up from the linted file.

```toml
[tool.traindoctor]
select = ["TRN1", "TRN301"]        # code prefixes, rule names, or "strict" (default + opt-in rules)
ignore = ["TRN202"]
exclude = ["legacy/**", "*_pb2.py"]
lint-on-change = true               # language server: lint while typing
test-severity = "info"              # findings in test files are at most this severe ("default": unchanged)
[tool.traindoctor.severity]
TRN201 = "error"
[tool.traindoctor.per-file-ignores]
"tests/**" = ["TRN101"]
```
"""

from __future__ import annotations

import fnmatch
import functools
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Iterable

from .model import Severity


class ConfigError(ValueError):
    """A `[tool.traindoctor]` table that does not follow the schema."""


def _codes(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(v.strip().upper() if v.strip().upper().startswith("TRN") else v.strip().lower()
                 for v in values if v and v.strip())


def _matches(code: str, name: str, patterns: tuple[str, ...]) -> bool:
    return any(code.startswith(p) or name == p for p in patterns)


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] = ()  # empty: every rule
    ignore: tuple[str, ...] = ()
    severity: tuple[tuple[str, Severity], ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = ()
    lint_on_change: bool = True
    test_severity: Severity | None = Severity.INFO  # cap for findings in test files; None: no cap
    root: Path | None = field(default=None, compare=False)  # folder of the pyproject.toml

    def enabled(self, code: str, name: str = "", path: str | None = None, rule_set: str = "default") -> bool:
        """`rule_set` is the rule's set: "default" rules run unless deselected;
        "strict" rules only when selected by code or name, or by "strict"/"all"."""
        if not self.select:
            if rule_set != "default":
                return False
        elif not (_matches(code, name, self.select) if rule_set == "default" else
                  code in self.select or name in self.select) \
                and not ("all" in self.select or "strict" in self.select):
            return False
        if _matches(code, name, self.ignore):
            return False
        if path is not None:
            rel = self.relative(path)
            for pattern, codes in self.per_file_ignores:
                if _glob(rel, pattern) and _matches(code, name, codes):
                    return False
        return True

    def severity_for(self, code: str, default: Severity, path: str | None = None) -> Severity:
        """A configured severity for the code, else the rule's; in a test file (tests/, test_*.py,
        *_test.py, conftest.py) the rule's is lowered to `test_severity`."""
        for key, value in self.severity:
            if code == key:
                return value
        if path is not None and self.test_severity is not None and _RANK[self.test_severity] < _RANK[default] \
                and _is_test_path(self.root, path):
            return self.test_severity
        return default

    def is_excluded(self, path: str) -> bool:
        rel = self.relative(path)
        return any(_glob(rel, pattern) for pattern in self.exclude)

    def relative(self, path: str) -> str:
        p = Path(path)
        if self.root is not None:
            try:
                return p.resolve().relative_to(self.root.resolve()).as_posix()
            except ValueError:
                pass
        return p.as_posix()

    def with_overrides(
        self,
        select: Iterable[str] | None = None,
        ignore: Iterable[str] | None = None,
        severity: dict[str, str] | None = None,
        lint_on_change: bool | None = None,
    ) -> "Config":
        """Command-line or editor settings on top of the file's settings:
        a non-empty select replaces it, ignores add up, severities override."""
        updated = self
        if select:
            updated = replace(updated, select=_codes(select))
        if ignore:
            updated = replace(updated, ignore=updated.ignore + _codes(ignore))
        if severity:
            merged = dict(updated.severity)
            merged.update(_severities(severity))
            updated = replace(updated, severity=tuple(sorted(merged.items())))
        if lint_on_change is not None:
            updated = replace(updated, lint_on_change=lint_on_change)
        return updated


_RANK = {Severity.HINT: 0, Severity.INFO: 1, Severity.WARNING: 2, Severity.ERROR: 3}


@functools.lru_cache(maxsize=256)
def _is_test_path(root: Path | None, path: str) -> bool:
    """is_test_file of `path` relative to the configuration's folder (asked once per finding)."""
    return is_test_file(Config(root=root).relative(path))


def is_test_file(path: str) -> bool:
    """A unit test or its fixtures: in a `tests`/`test` folder (one of the three nearest, so that
    a checkout under /home/me/test/ is not all tests), or named like one."""
    parts = PurePosixPath(Path(path).as_posix()).parts
    name = parts[-1] if parts else ""
    return any(p in ("tests", "test") for p in parts[-4:-1]) or name.startswith("test_") or \
        name.endswith("_test.py") or name == "conftest.py"


def _glob(rel: str, pattern: str) -> bool:
    if fnmatch.fnmatch(rel, pattern) or PurePosixPath(rel).match(pattern):
        return True
    # "dir/**" also matches files directly under dir
    if pattern.endswith("/**") and rel.startswith(pattern[:-2]):
        return True
    return fnmatch.fnmatch(PurePosixPath(rel).name, pattern)


def _severities(raw: dict[str, Any]) -> dict[str, Severity]:
    out = {}
    for code, value in raw.items():
        try:
            out[str(code).upper()] = Severity(str(value).lower())
        except ValueError:
            raise ConfigError(f"severity for {code}: {value!r} is not one of error, warning, info, hint") from None
    return out


def _str_list(table: dict[str, Any], key: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"[tool.traindoctor] {key} must be a list of strings")
    return tuple(value)


def parse_table(table: dict[str, Any], root: Path | None = None) -> Config:
    if not isinstance(table, dict):
        raise ConfigError("[tool.traindoctor] must be a table")
    pfi = table.get("per-file-ignores", table.get("per_file_ignores", {}))
    if not isinstance(pfi, dict):
        raise ConfigError("[tool.traindoctor.per-file-ignores] must be a table")
    lint_on_change = table.get("lint-on-change", table.get("lint_on_change", True))
    test_severity = table.get("test-severity", table.get("test_severity", "info"))
    if str(test_severity).lower() == "default":
        capped = None
    else:
        capped = _severities({"test-severity": test_severity})["TEST-SEVERITY"]
    return Config(
        select=_codes(_str_list(table, "select")),
        ignore=_codes(_str_list(table, "ignore")),
        severity=tuple(sorted(_severities(table.get("severity", {})).items())),
        per_file_ignores=tuple(
            (str(pattern), _codes(codes if isinstance(codes, list) else [codes]))
            for pattern, codes in pfi.items()
        ),
        exclude=_str_list(table, "exclude"),
        lint_on_change=bool(lint_on_change),
        test_severity=capped,
        root=root,
    )


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml with a [tool.traindoctor] table, walking up."""
    folder = start if start.is_dir() else start.parent
    for candidate in [folder, *folder.resolve().parents]:
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file() and _has_table(pyproject, pyproject.stat().st_mtime_ns):
            return pyproject
    return None


@functools.lru_cache(maxsize=64)
def _has_table(pyproject: Path, mtime_ns: int) -> bool:
    try:
        return "traindoctor" in _read_toml(pyproject, mtime_ns).get("tool", {})
    except ConfigError:
        return True  # surface the error when it is loaded


@functools.lru_cache(maxsize=64)
def _read_toml(pyproject: Path, mtime_ns: int) -> dict[str, Any]:
    try:
        return tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{pyproject}: {exc}") from None


def load_config(path: str | Path) -> Config:
    """The configuration that applies to `path` (a file or folder)."""
    pyproject = find_pyproject(Path(path))
    if pyproject is None:
        return Config()
    data = _read_toml(pyproject, pyproject.stat().st_mtime_ns)
    return parse_table(data.get("tool", {}).get("traindoctor", {}), root=pyproject.parent)
