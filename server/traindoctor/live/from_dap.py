"""DAP answers (exceptionInfo, stackTrace, probe evaluations) -> Diagnosis.

Shared by `traindoctor run`/`attach` and the language server, whose client
(the VS Code extension) runs its own debug session and forwards the same bodies.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ..model import Diagnosis, Frame, ProbeResult, Probes, TensorSummary
from .probes import parse_result

_CURRENT_FRAME = " (Current frame)"
_NOTE = re.compile(r"\s+\(note: full exception trace is shown but execution is paused at: .*\)$")
_CHAIN_MESSAGES = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)
_HEADER = "Traceback (most recent call last):"


def parse_probe_results(probe_results: dict[str, Any] | None) -> tuple[ProbeResult, ...]:
    """Each value: an `evaluate` response body, or an error dict / string."""
    results = []
    for name, answer in (probe_results or {}).items():
        results.append(_parse_one(str(name), answer))
    return tuple(results)


def _parse_one(name: str, answer: Any) -> ProbeResult:
    if isinstance(answer, ProbeResult):
        return answer
    if isinstance(answer, str):
        return ProbeResult(name, ok=False, error=answer)
    if not isinstance(answer, dict):
        return ProbeResult(name, ok=False, error="no answer")
    if "result" not in answer:
        error = answer.get("error") or answer.get("message") or "no result"
        if isinstance(error, dict):
            error = error.get("format") or str(error)
        return ProbeResult(name, ok=False, error=str(error))
    try:
        return ProbeResult(name, ok=True, value=parse_result(str(answer["result"])))
    except ValueError as exc:
        # A probe that raised comes back as the error text, not as a repr'd string.
        text = str(answer["result"]).strip()
        reason = text.splitlines()[-1] if text and not text.startswith(("'", '"')) else str(exc)
        return ProbeResult(name, ok=False, error=reason[:300])


def tensor_summaries(results: tuple[ProbeResult, ...]) -> tuple[TensorSummary, ...]:
    probe = next((r for r in results if r.name == "tensors" and r.ok), None)
    out = []
    for item in probe.value if probe and isinstance(probe.value, list) else ():
        try:
            out.append(
                TensorSummary(
                    name=str(item["name"]),
                    shape=tuple(int(d) for d in item.get("shape", ())),
                    dtype=str(item.get("dtype", "")),
                    device=str(item.get("device", "")),
                    requires_grad=bool(item.get("requires_grad", False)),
                    grad_fn=item.get("grad_fn"),
                    nan_count=item.get("nan_count"),
                    inf_count=item.get("inf_count"),
                    min=item.get("min"),
                    max=item.get("max"),
                    mean=item.get("mean"),
                    version=item.get("version"),
                    scope=item.get("scope"),
                )
            )
        except (KeyError, TypeError, ValueError):
            continue
    return tuple(out)


def build_probes(results: tuple[ProbeResult, ...], frame: Frame | None = None) -> Probes:
    env_probe = next((r for r in results if r.name == "env" and r.ok), None)
    env = env_probe.value if env_probe and isinstance(env_probe.value, dict) else {}
    rank = None
    dist = env.get("dist") or {}
    environ = env.get("environ") or {}
    if isinstance(dist.get("rank"), int):
        rank = dist["rank"]
    elif str(environ.get("RANK", "")).isdigit():
        rank = int(environ["RANK"])
    worker = (env.get("worker") or {}).get("id")
    return Probes(
        results=results,
        tensors=tensor_summaries(results),
        frame=frame,
        rank=rank,
        worker=worker if isinstance(worker, int) else None,
    )


def user_frame(stack_trace: dict[str, Any] | None, folders: Any = ()) -> tuple[dict[str, Any] | None, Frame | None]:
    """The deepest user frame of a DAP stack (the one definition: diagnose.user_frame)."""
    from ..diagnose.user_frame import dap_user_frame, is_user_path

    raw = dap_user_frame((stack_trace or {}).get("stackFrames") or [], folders)
    if raw is None:
        return None, None
    path = str((raw.get("source") or {}).get("path") or "")
    if not path:
        return raw, None
    name = str(raw.get("name", "")).removesuffix(_CURRENT_FRAME)
    return raw, Frame(path=path, line=int(raw.get("line") or 0), function=name, is_user=is_user_path(path))


def current_frame(stack_trace: dict[str, Any] | None) -> dict[str, Any] | None:
    """The frame debugpy is paused in (it carries `__exception__`)."""
    for raw in (stack_trace or {}).get("stackFrames") or []:
        if str(raw.get("name", "")).endswith(_CURRENT_FRAME):
            return raw
    frames = (stack_trace or {}).get("stackFrames") or []
    return frames[0] if frames else None


def traceback_text(exception_info: dict[str, Any] | None, results: tuple[ProbeResult, ...] = (),
                   forward_trace: str = "") -> str:
    """The failure as Python would print it.

    Prefer the `traceback` probe (formatted from the live exception, library
    frames included); else rebuild it from debugpy's `details.stackTrace`, which
    lacks the header lines and marks the paused frame. `forward_trace`: anomaly
    mode's warning for this process (live/anomaly.py `forward_trace`), put in front
    as the process printed it before the exception, so that the engine reads the
    forward line as it does in a pasted log.
    """
    text = _traceback_text(exception_info, results)
    if forward_trace.strip():
        text = forward_trace.rstrip("\n") + "\n" + text
    return text


def _traceback_text(exception_info: dict[str, Any] | None, results: tuple[ProbeResult, ...]) -> str:
    probe = next((r for r in results if r.name == "traceback" and r.ok), None)
    if probe and isinstance(probe.value, str) and probe.value.strip():
        return probe.value  # debugpy's and runpy's frames too: the engine hides and counts them
    info = exception_info or {}
    details = info.get("details") or {}
    text = str(details.get("stackTrace") or "")
    if not text.strip():
        type_name = _NOTE.sub("", str(details.get("typeName") or info.get("exceptionId") or "Exception"))
        message = str(details.get("message") or info.get("description") or "")
        return f"{_HEADER}\n{type_name}: {message}\n"
    # debugpy lists each exception's frames deepest first; Python prints them
    # deepest last, under a header, with the chain messages between exceptions.
    out: list[str] = []
    frames: list[list[str]] = []
    tail: list[str] = []

    def flush() -> None:
        if frames or tail:
            out.append(_HEADER)
            for block in reversed(frames):
                out.extend(block)
            out.extend(tail)
        frames.clear()
        tail.clear()

    for line in (line.replace(_CURRENT_FRAME, "") for line in text.splitlines()):
        if not frames and not tail and not line.strip():
            out.append(line)
        elif line.startswith('  File "') and not tail:
            frames.append([line])
        elif line.startswith("    ") and frames and not tail:
            frames[-1].append(line)
        else:
            tail.append(line)
            if line.strip() in _CHAIN_MESSAGES:
                flush()
    flush()
    return "\n".join(out) + "\n"


def diagnose_from_dap(
    exception_info: dict[str, Any],
    stack_trace: dict[str, Any],
    probe_results: dict[str, Any],
    *,
    correlate: bool = True,
    base_dir: Any = None,
    forward_trace: str = "",
) -> Diagnosis:
    """The Diagnosis for a debuggee stopped on an exception, enriched with probes.
    `forward_trace`: what anomaly mode recorded in that process (see `traceback_text`)."""
    _, frame = user_frame(stack_trace, [base_dir] if base_dir else ())
    results = parse_probe_results(probe_results)
    probes = build_probes(results, frame)
    text = traceback_text(exception_info, results, forward_trace)
    return diagnose_probes(text, probes, correlate=correlate, base_dir=base_dir)


def diagnose_probes(text: str, probes: Probes, *, correlate: bool = True, base_dir: Any = None) -> Diagnosis:
    """The traceback engine's Diagnosis of `text`, with what the probes read (one pass, in the engine)."""
    from ..diagnose import diagnose_text  # one classifier for logs and live stops

    return diagnose_text(text, probes=probes, correlate=correlate, base_dir=base_dir)


def with_process(diagnosis: Diagnosis, process: dict[str, Any]) -> Diagnosis:
    """Name the process that failed (pid, rank, DataLoader worker) in the details."""
    details = dict(diagnosis.details or {})
    details["process"] = process
    return dataclasses.replace(diagnosis, details=details)
