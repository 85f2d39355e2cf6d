"""The API vocabulary of the analysis, loaded from rules/vocab/*.yaml (knowledge as data).

Each file holds its own keys (torch.yaml the core, others per rule family); a key
defined twice is an error, so that two files never silently disagree."""

from __future__ import annotations

import functools
import re
from typing import Any

import yaml

from ...catalog import SAFE_LOADER, rules_dir


class Vocab:
    """Every key is a plain attribute (rules read several per node: a `__getattr__` was a
    Python call each time)."""

    def __init__(self, raw: dict[str, Any]) -> None:
        clash = raw.keys() & (set(dir(Vocab)) | {"raw"})
        if clash:
            raise ValueError(f"vocabulary keys {sorted(clash)} are names of Vocab itself")
        self.__dict__.update(raw)
        self.raw = raw

    def has(self, key: str, value: str) -> bool:
        return value in self.raw[key]

    def starts(self, key: str, value: str) -> bool:
        return value.startswith(tuple(self.raw[key]))

    def pattern(self, key: str) -> re.Pattern[str]:
        return _compiled(self.raw[key])


@functools.lru_cache(maxsize=64)
def _compiled(text: str) -> re.Pattern[str]:
    return re.compile(text, re.IGNORECASE)


@functools.cache
def vocab() -> Vocab:
    data: dict[str, Any] = {}
    for path in sorted((rules_dir() / "vocab").glob("*.yaml")):
        part = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER) or {}
        clash = data.keys() & part.keys()
        if clash:
            raise ValueError(f"{path.name} redefines vocabulary keys {sorted(clash)}")
        data.update(part)
    frozen: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, list):
            frozen[key] = frozenset(value) if not key.endswith("_prefixes") and key not in (
                "model_constructors", "model_factory_suffixes") else tuple(value)
        else:
            frozen[key] = value
    return Vocab(frozen)
