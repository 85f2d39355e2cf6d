"""Hooks of the `distributed` kind (rules/signatures/*.yaml with kind: distributed).

`derive`: the timeout in seconds.
`refine`: which rank failed first and what the others did; which ranks timed out.
"""

from __future__ import annotations

from typing import Any

from . import Failure, one_line


def derive(facts: dict[str, Any], text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if facts.get("timeout_ms"):
        out["timeout_s"] = f"{int(facts['timeout_ms']) / 1000:g}"
    return out


def refine(failure: Failure) -> None:
    if failure.signature.id == "distributed-rank-failure":
        _rank_failure(failure)
    elif failure.signature.id == "distributed-nccl-timeout":
        _timeout(failure)


def _rank_failure(failure: Failure) -> None:
    facts, selection = failure.facts, failure.selection
    elastic = selection.elastic
    if elastic is not None and elastic.root is not None:
        facts.setdefault("rank", elastic.root.rank)
        if elastic.root.exitcode is not None:
            facts["exitcode"] = elastic.root.exitcode
    if failure.block is not None and failure.block.exception is not None:
        facts["rank_exception"] = one_line(failure.block.exception)
    if failure.location is not None:
        facts["rank_site"] = f"{failure.location.path}:{failure.location.line}"
    others = [f"rank {r}: {note}" for r, note in selection.rank_notes.items() if r != facts.get("rank")]
    if others:
        facts["others"] = "; ".join(others)


def _timeout(failure: Failure) -> None:
    timed_out = sorted({l.rank for l in failure.lines if l.rank is not None and "Watchdog caught" in l.text})
    if timed_out:
        failure.facts["timed_out_ranks"] = ", ".join(map(str, timed_out))
        failure.details["timed_out_ranks"] = timed_out
        if len(timed_out) > 1:
            failure.rank = None  # every rank timed out: none of them is the culprit
