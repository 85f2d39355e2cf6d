"""`workspace/executeCommand` handlers.

The diagnosis and live back ends are imported inside each handler: the server must
start (and lint) even in an installation where one of them is missing or broken,
and the command then answers with a one-line error instead.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import logging
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pygls.uris import from_fs_path

from ..lint import lint_source
from .convert import SOURCE, Converter, diagnostic
from .notebooks import diagnosis_on_cells

if TYPE_CHECKING:
    from ..model import Diagnosis, Frame
    from .host import Host

logger = logging.getLogger(__name__)

DIAGNOSE_TRACEBACK = "traindoctor.diagnoseTraceback"
DIAGNOSE_LIVE = "traindoctor.diagnoseLive"
PROBE_EXPRESSIONS = "traindoctor.probeExpressions"
USER_FRAME = "traindoctor.userFrame"
CLEAR_DIAGNOSIS = "traindoctor.clearDiagnosis"
LINT_WORKSPACE = "traindoctor.lintWorkspace"
ANOMALY_ENVIRONMENT = "traindoctor.anomalyEnvironment"
RELEASE_ANOMALY_ENVIRONMENT = "traindoctor.releaseAnomalyEnvironment"
DEBUGGER_RULES = "traindoctor.debuggerRules"

class CommandError(Exception):
    """A command that cannot run: the message goes back to the client as is."""


def _unavailable(feature: str, exc: BaseException) -> CommandError:
    return CommandError(f"traindoctor: {feature} is not available in this installation ({type(exc).__name__}: {exc})")


def to_json(value: Any) -> Any:
    """Frozen dataclasses -> JSON values, using a class's own to_json where it has one."""
    if hasattr(value, "to_json") and callable(value.to_json):
        return value.to_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _first_text_argument(args: tuple[Any, ...]) -> str:
    if args:
        first = args[0]
        if isinstance(first, str):
            return first
        if isinstance(first, dict) and isinstance(first.get("text"), str):
            return first["text"]
    raise CommandError(f"{DIAGNOSE_TRACEBACK} expects the traceback text (a string or {{\"text\": ...}})")


# --- diagnosis -> diagnostics on the user's files -----------------------------------


def _file_text(ls: "Host", path: Path) -> str | None:
    uri = from_fs_path(str(path))
    if uri in ls.documents:
        try:
            return ls.workspace.get_text_document(uri).source
        except Exception:
            pass
    try:
        return path.read_text(encoding="utf-8-sig", errors="replace")
    except OSError:
        return None


def _resolve_frame(frame: "Frame", base_dir: str | None) -> Path | None:
    """The local file of a frame: the one resolver (diagnose.correlate.resolve), which also
    maps a log from another machine onto the workspace."""
    from ..diagnose.correlate import resolve

    local = resolve(frame.path, Path(base_dir) if base_dir else Path.cwd())
    if local is None:
        return None
    try:
        return local.resolve()
    except OSError:
        return None


def _inside(path: Path, folders: list[Path]) -> bool:
    return any(path.is_relative_to(folder) for folder in folders)


def _line_range(ls: "Host", path: Path, line_1based: int) -> lsp.Range:
    """The frame's line, from its first non-blank character to its end."""
    line = max(line_1based - 1, 0)
    text = _file_text(ls, path)
    if text is None:
        return lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0))
    conv = Converter(text, ls.workspace.position_codec)
    if line >= len(conv.lines):
        return lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0))
    body = conv.lines[line].rstrip("\r\n")
    start = len(body) - len(body.lstrip())
    return lsp.Range(conv.position(line, start), conv.position(line, len(body)))


def diagnosis_diagnostics(ls: "Host", diagnosis: "Diagnosis") -> dict[str, list[lsp.Diagnostic]]:
    base_dir = ls.first_workspace_dir()
    folders = [Path(d).resolve() for d in ls.workspace_dirs()]
    frames = list(diagnosis.frames)
    if diagnosis.location is not None and diagnosis.location not in frames:
        frames.append(diagnosis.location)
    located: list[tuple[Frame, Path]] = []
    for frame in frames:
        path = _resolve_frame(frame, base_dir)
        if path is not None:
            located.append((frame, path))
    targets = [(f, p) for f, p in located if f.is_user and _inside(p, folders)]
    if not targets and diagnosis.location is not None:
        # The diagnosis names its location even when the frame is not flagged as user code.
        targets = [(f, p) for f, p in located if f == diagnosis.location and _inside(p, folders)]
    out: dict[str, list[lsp.Diagnostic]] = {}
    for frame, path in targets:
        uri = from_fs_path(str(path))
        others = [(f, p) for f, p in located if (f, p) != (frame, path)]
        message = diagnosis.title
        related = None
        if others and ls.client.related_information:
            related = [
                lsp.DiagnosticRelatedInformation(
                    location=lsp.Location(uri=from_fs_path(str(p)), range=_line_range(ls, p, f.line)),
                    message=f"{f.function}()" + ("" if f.is_user else " (library)"),
                )
                for f, p in others
            ]
        elif others:
            message += "".join(f"\n{f.function}() at {p}:{f.line}" for f, p in others)
        out.setdefault(uri, []).append(
            lsp.Diagnostic(
                range=_line_range(ls, path, frame.line),
                message=message,
                severity=lsp.DiagnosticSeverity.Error,
                code=diagnosis.kind,
                source=SOURCE,
                related_information=related,
            )
        )
    for uri, diagnostics in diagnosis_on_cells(ls, diagnosis).items():  # frames in notebook cells
        out.setdefault(uri, []).extend(diagnostics)
    return out


async def _publish_diagnosis(ls: "Host", diagnosis: "Diagnosis") -> None:
    loop = asyncio.get_running_loop()
    # Reading the implicated files is blocking I/O: keep it off the event loop.
    by_uri = await loop.run_in_executor(ls.engine_pool, diagnosis_diagnostics, ls, diagnosis)
    ls.set_diagnosis_diagnostics(by_uri)


async def diagnose_traceback(ls: "Host", *args: Any) -> Any:
    text = _first_text_argument(args)
    try:
        from ..diagnose import diagnose_text
    except Exception as exc:
        raise _unavailable("traceback diagnosis", exc) from None
    loop = asyncio.get_running_loop()
    try:
        diagnosis = await loop.run_in_executor(
            ls.engine_pool, lambda: diagnose_text(text, base_dir=ls.first_workspace_dir())
        )
    except Exception as exc:
        logger.exception("diagnoseTraceback failed")
        raise CommandError(f"traindoctor: traceback diagnosis failed: {type(exc).__name__}: {exc}") from None
    await _publish_diagnosis(ls, diagnosis)
    return to_json(diagnosis)


async def diagnose_live(ls: "Host", *args: Any) -> Any:
    """{exceptionInfo, stackTrace, probes[, pid, anomalyDir]}: `anomalyDir` is the folder of a launch
    made with traindoctor.anomalyEnvironment, `pid` the debuggee's (the DAP `process` event's).
    An autograd error whose forward line only anomaly mode gives answers details.anomaly_rerun."""
    payload = args[0] if args and isinstance(args[0], dict) else None
    if payload is None:
        raise CommandError(f"{DIAGNOSE_LIVE} expects {{exceptionInfo, stackTrace, probes}}")
    try:
        from ..live import anomaly
        from ..live.from_dap import diagnose_from_dap
    except Exception as exc:
        raise _unavailable("live diagnosis", exc) from None
    loop = asyncio.get_running_loop()
    anomaly_dir = payload.get("anomalyDir")

    def diagnose() -> "Diagnosis":
        return diagnose_from_dap(
            payload.get("exceptionInfo") or {},
            payload.get("stackTrace") or {},
            payload.get("probes") or {},
            base_dir=ls.first_workspace_dir(),
            forward_trace=ls.anomaly_runs.forward_trace(anomaly_dir, payload.get("pid")) if anomaly_dir else "",
        )

    try:
        diagnosis = await loop.run_in_executor(ls.engine_pool, diagnose)
    except Exception as exc:
        logger.exception("diagnoseLive failed")
        raise CommandError(f"traindoctor: live diagnosis failed: {type(exc).__name__}: {exc}") from None
    await _publish_diagnosis(ls, diagnosis)
    result = to_json(diagnosis)
    if not anomaly_dir and anomaly.wants_forward_line(diagnosis):
        # As `traindoctor run` offers its --anomaly re-run; NaN checks only for a NaN from backward.
        result.setdefault("details", {})["anomaly_rerun"] = {
            "offered": True, "check_nan": anomaly.nan_from_backward(diagnosis)}
    return result


def anomaly_environment(ls: "Host", *args: Any) -> Any:
    """{env?, pythonArgs?, checkNan?} of a debug launch -> {directory, env}: the variables that launch
    needs for anomaly detection (merged into its env by the editor), in a folder made for it."""
    payload = args[0] if args and isinstance(args[0], dict) else {}
    if args and not isinstance(args[0], dict):
        raise CommandError(f"{ANOMALY_ENVIRONMENT} expects {{env, pythonArgs, checkNan}}")
    env = payload.get("env")
    python_args = payload.get("pythonArgs")
    if (env is not None and not isinstance(env, dict)) or (python_args is not None and not isinstance(python_args, list)):
        raise CommandError(f"{ANOMALY_ENVIRONMENT}: env is an object and pythonArgs a list")
    from .anomaly_runs import AnomalyRunError

    try:
        return ls.anomaly_runs.create(env, python_args, bool(payload.get("checkNan", True)))
    except (AnomalyRunError, OSError) as exc:
        raise CommandError(f"traindoctor: {exc}") from None


def release_anomaly_environment(ls: "Host", *args: Any) -> Any:
    """{directory}: the launch ended; its folder goes."""
    payload = args[0] if args and isinstance(args[0], dict) else {}
    return {"released": ls.anomaly_runs.release(payload.get("directory"))}


def probe_expressions(ls: "Host", *args: Any) -> Any:
    try:
        from ..live.probes import probe_expressions as expressions
    except Exception as exc:
        raise _unavailable("live probes", exc) from None
    return to_json(expressions())


def clear_diagnosis(ls: "Host", *args: Any) -> None:
    ls.set_diagnosis_diagnostics({})


# --- lintWorkspace ------------------------------------------------------------------


def python_files(folders: list[str]) -> list[str]:
    """The workspace's Python files: the same walker as `traindoctor check` (lint/files.py)."""
    from ..lint.files import python_files as walk

    return [str(path) for path in walk(folders) if path.is_file()]


def user_frame(ls: "Host", *args: Any) -> Any:
    """Which DAP frame the extension should probe: the engine's one definition of user frame; and
    the frame debugpy is paused in, which holds the exception (the `traceback` probe's frame: without
    justMyCode that is a library frame, not the user's)."""
    payload = args[0] if args and isinstance(args[0], dict) else None
    if payload is None:
        raise CommandError(f"{USER_FRAME} expects {{stackTrace}}")
    from ..diagnose.user_frame import dap_user_frame
    from ..live.from_dap import current_frame

    stack = payload.get("stackTrace") or {}
    frames = stack.get("stackFrames") if isinstance(stack, dict) else None
    chosen = dap_user_frame(frames or [], ls.workspace_dirs())
    paused = current_frame({"stackFrames": frames or []})
    return {"frameId": None if chosen is None else chosen.get("id"),
            "currentFrameId": None if paused is None else paused.get("id")}


def debugger_rules(ls: "Host", *args: Any) -> Any:
    """debugpy `rules` for a debug launch: traindoctor's and runpy's frames left out of the stack
    traces debugpy answers with (internal_frames.py)."""
    from ..internal_frames import debugger_rules as rules

    return rules()


def _lint_closed_file(ls: "Host", path: str, codec, client) -> tuple[list[lsp.Diagnostic], str | None, bool]:
    config, _problem = ls.settings.config_for(path, ls.first_workspace_dir())
    if config.is_excluded(path):
        return [], None, False
    from ..lint.api import LintError, read_source

    try:
        text = read_source(Path(path))
    except LintError as exc:
        return [], str(exc), True
    result = lint_source(text, path, config)
    conv = Converter(text, codec)
    uri = from_fs_path(path)
    return [diagnostic(f, conv, uri, config, client) for f in result.findings], result.error, True


async def lint_workspace(ls: "Host", *args: Any) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    files = await loop.run_in_executor(ls.engine_pool, python_files, ls.workspace_dirs())
    token: str | None = None
    cancel_signal = None
    if ls.client.work_done_progress:
        token = f"traindoctor-lint-{uuid.uuid4()}"
        try:
            await ls.work_done_progress.create_async(token)
            cancel_signal = ls.work_done_progress.tokens.get(token)
            ls.work_done_progress.begin(
                token,
                lsp.WorkDoneProgressBegin(title="traindoctor: linting workspace", cancellable=True,
                                          message=f"0/{len(files)} files", percentage=0),
            )
        except Exception as exc:
            logger.warning("no progress reporting: %s", exc)
            token = None
    linted = findings = 0
    errors: list[dict[str, str]] = []
    cancelled = False
    try:
        for index, path in enumerate(files):
            if cancel_signal is not None and cancel_signal.cancelled():
                cancelled = True
                break
            uri = from_fs_path(path)
            doc = ls.documents.get(uri)
            if doc is not None:
                snapshot = await ls.current_snapshot(doc)
                diags, error, counted = list(snapshot.diagnostics), snapshot.error, True
            else:
                diags, error, counted = await loop.run_in_executor(
                    ls.engine_pool, _lint_closed_file, ls, path, ls.workspace.position_codec, ls.client
                )
                ls.publish_file_findings(uri, diags)
            linted += counted
            findings += len(diags)
            if error:
                errors.append({"path": path, "error": error})
            if token is not None:
                ls.work_done_progress.report(
                    token,
                    lsp.WorkDoneProgressReport(message=f"{index + 1}/{len(files)} files",
                                               percentage=int(100 * (index + 1) / max(len(files), 1))),
                )
    except asyncio.CancelledError:
        cancelled = True
        raise
    finally:
        if token is not None:
            summary = "cancelled" if cancelled else f"{linted} files, {findings} findings"
            ls.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message=summary))
            ls.work_done_progress.tokens.pop(token, None)
    return {"files": linted, "findings": findings, "errors": errors, "cancelled": cancelled}


def _handler(fn):
    """pygls reads a command handler's annotations to convert its arguments; these
    take raw JSON values, so the registered handler carries none."""
    if asyncio.iscoroutinefunction(fn):

        async def run_async(ls, *args):
            return await fn(ls, *args)

        return run_async

    def run(ls, *args):
        return fn(ls, *args)

    return run


def register(server) -> None:
    server.command(DIAGNOSE_TRACEBACK)(_handler(diagnose_traceback))
    server.command(DIAGNOSE_LIVE)(_handler(diagnose_live))
    server.command(PROBE_EXPRESSIONS)(_handler(probe_expressions))
    server.command(USER_FRAME)(_handler(user_frame))
    server.command(CLEAR_DIAGNOSIS)(_handler(clear_diagnosis))
    server.command(LINT_WORKSPACE)(_handler(lint_workspace))
    server.command(ANOMALY_ENVIRONMENT)(_handler(anomaly_environment))
    server.command(RELEASE_ANOMALY_ENVIRONMENT)(_handler(release_anomaly_environment))
    server.command(DEBUGGER_RULES)(_handler(debugger_rules))


