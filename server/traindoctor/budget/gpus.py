"""The GPU table and the budget's assumptions (rules/budget/*.yaml), and `--gpu-memory` sizes."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import yaml

from ..catalog import rules_dir

GIB = 1 << 30
_UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "kib": 1 << 10, "m": 1e6, "mb": 1e6, "mib": 1 << 20,
          "g": 1e9, "gb": 1e9, "gib": GIB, "t": 1e12, "tb": 1e12, "tib": 1 << 40}


class GpuError(ValueError):
    """An unknown GPU name or a size that does not parse (one line for the user)."""


@dataclass(frozen=True)
class Gpu:
    key: str
    name: str
    memory_bytes: int
    tflops: Mapping[str, float] = field(hash=False)
    bandwidth_gbs: float
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "name": self.name, "memory_bytes": self.memory_bytes,
                "tflops": dict(self.tflops), "bandwidth_gbs": self.bandwidth_gbs, "source": self.source}


@functools.lru_cache(maxsize=1)
def gpu_table() -> dict[str, Gpu]:
    data = yaml.safe_load((rules_dir() / "budget" / "gpus.yaml").read_text(encoding="utf-8"))
    table = {}
    for key, entry in data["gpus"].items():
        table[key] = Gpu(key, entry["name"], int(float(entry["memory_gib"]) * GIB),
                         {k: float(v) for k, v in entry["tflops"].items()}, float(entry["bandwidth_gbs"]),
                         entry["source"])
    return table


@functools.lru_cache(maxsize=1)
def assumptions() -> dict[str, Any]:
    return yaml.safe_load((rules_dir() / "budget" / "budget.yaml").read_text(encoding="utf-8"))


def parse_size(text: str) -> int:
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _UNITS:
        raise GpuError(f"cannot read the size {text!r}: write e.g. 24GiB, 80GB or 16000MiB")
    return int(float(match.group(1)) * _UNITS[unit])


def choose(name: str | None, memory: str | None) -> Gpu:
    """The GPU named by --gpu (default from budget.yaml), with --gpu-memory overriding its memory."""
    table = gpu_table()
    key = (name or assumptions()["default_gpu"]).lower()
    if key not in table:
        raise GpuError(f"unknown GPU {name!r}: one of {', '.join(sorted(table))}, or give --gpu-memory SIZE")
    gpu = table[key]
    if memory:
        size = parse_size(memory)
        gpu = Gpu(gpu.key if name else "custom", gpu.name if name else f"a GPU with {size / GIB:.1f} GiB",
                  size, gpu.tflops, gpu.bandwidth_gbs,
                  gpu.source if name else f"--gpu-memory {memory}; speed of {gpu.key} assumed ({gpu.source})")
    return gpu
