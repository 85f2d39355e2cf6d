"""Hooks of the `host-oom` kind (rules/signatures/*.yaml with kind: host-oom).

`derive`: the requested size in bytes, and whether it is beyond any host.
`enrich_live`: the memory arithmetic (model, optimizer state, host and process memory) from the probes.
"""

from __future__ import annotations

import re
from typing import Any

from ..extract import parse_size, human_size
from . import Live


def derive(facts: dict[str, Any], text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    n = None
    if facts.get("requested_bytes"):
        n = int(facts["requested_bytes"])
        out["requested"] = human_size(n)
    elif facts.get("requested"):
        n = parse_size(facts["requested"])
    if n is not None:
        out["requested_bytes"] = n
        # More than 16 TiB in one allocation is beyond any single host.
        out["absurd_size"] = n > 16 * 1024**4
    return out


_REQUEST = re.compile(r"you tried to allocate (\d+) bytes")


def enrich_live(live: Live) -> None:
    from ..probe_values import probes_value
    from . import model_memory

    memory, _ = model_memory(live)
    env = probes_value(live.probes, "env", dict) or {}
    host = env.get("host_memory") or {}
    process = env.get("process_memory") or {}
    request = _REQUEST.search(live.message)
    if request:
        memory["requested"] = int(request.group(1))
    if host:
        memory["host_available"] = host.get("MemAvailable")
        memory["host_total"] = host.get("MemTotal")
    if process:
        memory["process_rss"] = process.get("VmRSS")
    parts = []
    if request:
        parts.append(f"requested {human_size(int(request.group(1)))}")
    if host.get("MemAvailable") is not None:
        available, total = int(host["MemAvailable"]), int(host.get("MemTotal") or 0)
        parts.append(f"{human_size(available)} available of {human_size(total)}")
    if process.get("VmRSS") is not None:
        parts.append(f"this process uses {human_size(int(process['VmRSS']))}")
    if parts:
        live.evidence.append("Host memory: " + ", ".join(parts) + ".")
    live.details["memory"] = memory
