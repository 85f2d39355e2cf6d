"""Where each kind's mechanism and each fix is stated: rules/references/kinds.yaml.

`references_for(kind, fixes, torch_version)` returns the references a diagnosis shows
(JSON `references`, the CLI's "References:", the panel's links): the kind's, then those of
its fixes that cite their own page, each URL for the run's torch version when the log shows it.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import yaml

from ..catalog import rules_dir

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


@functools.cache
def _catalog() -> tuple[dict[str, list[dict[str, str]]], list[tuple[re.Pattern[str], list[dict[str, str]]]]]:
    try:
        data = yaml.safe_load((rules_dir() / "references" / "kinds.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return {}, []
    kinds = {str(k): [dict(r) for r in v or ()] for k, v in (data.get("kinds") or {}).items()}
    fixes = [(re.compile(str(entry["match"]), re.I), [dict(r) for r in entry.get("refs") or ()])
             for entry in data.get("fixes") or ()]
    return kinds, fixes


def kinds_with_references() -> set[str]:
    return {k for k, refs in _catalog()[0].items() if refs}


def _versioned(url: str, torch_version: str | None) -> str:
    found = _VERSION.match(torch_version or "")
    docs = f"{found.group(1)}.{found.group(2)}" if found else "stable"
    tag = f"v{found.group(1)}.{found.group(2)}.{found.group(3) or 0}" if found else "main"
    return url.replace("{docs}", docs).replace("{tag}", tag)


def fix_references(title: str) -> list[dict[str, str]]:
    """The references of the first fix entry whose pattern matches `title` ([] when none)."""
    return next((refs for pattern, refs in _catalog()[1] if pattern.search(title)), [])


def references_for(kind: str, fix_titles: list[str] | tuple[str, ...] = (),
                   torch_version: str | None = None) -> list[dict[str, Any]]:
    """[{title, url, states, for}] : `for` is "kind" or the fix's title."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()

    def add(refs: list[dict[str, str]], for_: str) -> None:
        for ref in refs:
            url = _versioned(str(ref.get("url", "")), torch_version)
            if url and url not in seen:
                seen.add(url)
                out.append({"title": ref.get("title", ""), "url": url, "states": ref.get("states", ""), "for": for_})

    add(_catalog()[0].get(kind) or _catalog()[0].get("other", []), "kind")
    for title in fix_titles:
        add(fix_references(title), title)
    return out


def torch_version_of(details: dict[str, Any]) -> str | None:
    """The run's torch version: the log's environment lines, else the live env probe."""
    for key in ("run_env", "live_env"):
        env = details.get(key)
        if isinstance(env, dict) and isinstance(env.get("torch"), str) and _VERSION.match(env["torch"]):
            return env["torch"]
    return None
