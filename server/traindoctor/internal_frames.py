"""The user's traceback, not ours: which frames belong to traindoctor (the monitor's bootstrap and
hooks, the live debuggee entry), to the debugger (debugpy, pydevd) or to runpy, and the one way
every traceback traindoctor shows hides them and says how many it hid.

- `is_internal_path`: the definition (diagnose/user_frame.py never takes such a frame for the
  user's, diagnose/engine.py drops them from a diagnosis's frames and counts them).
- `hide_internal_frames`: the same on traceback text (the debug record's log).
- `debugger_rules`: the same frames as debugpy launch/attach `rules`, which debugpy applies to the
  `stackTrace` and `exceptionInfo` answers: VS Code's Call Stack and exception widget (the
  extension adds them to every `traindoctor` debug launch).
- `install_excepthook`: in the user's process, the traceback it prints when it dies goes through
  `hide_internal_frames`. monitor/bootstrap.py installs it when the process starts (`watch`); the
  live session sends `excepthook_expression` to a debuggee stopped at its unhandled exception,
  before letting it print (`run`, `attach`, `watch --stop-on`).

Standalone (standard library only): bootstrap.py loads this file by path, and the expression
carries its source, into the user's interpreter, which need not have traindoctor installed.
"""

from __future__ import annotations

import re
import sys
import traceback

_INTERNAL = re.compile(
    r"[/\\]traindoctor[/\\](?:monitor[/\\](?:bootstrap|hooks|runner)|live[/\\]\w+|internal_frames)\.py$"
    r"|^<frozen (?:runpy|traindoctor\.[\w.]+)>$|[/\\]runpy\.py$"
    r"|[/\\](?:debugpy|_pydevd_bundle|_pydev_bundle|_pydevd_frame_eval|pydevd_plugins)[/\\]|[/\\]pydevd\.py$"
)
# `_INTERNAL` as debugpy rule globs (pydevd's glob_matches_path: `**` any folders; `<frozen x>` file
# names are matched as they are). debugpy's and pydevd's own files need none: pydevd never shows them.
_DEBUGGER_EXCLUDED_PATHS = (
    "**/traindoctor/monitor/bootstrap.py",
    "**/traindoctor/monitor/hooks.py",
    "**/traindoctor/monitor/runner.py",
    "**/traindoctor/live/*.py",
    "**/traindoctor/internal_frames.py",
    "**/<frozen traindoctor.*>",
    "**/<frozen runpy>",
    "**/runpy.py",
)
_FILE_LINE = re.compile(r'^  File "(?P<path>[^"]*)", line \d+')
_HEADER = "Traceback (most recent call last):"


def is_internal_path(path: str) -> bool:
    """A frame of traindoctor's bootstrap, hooks or launcher, of debugpy/pydevd or of runpy."""
    return bool(path) and bool(_INTERNAL.search(path))


def debugger_rules() -> list[dict[str, object]]:
    """debugpy's `rules` launch/attach argument that leaves our frames out of the stack traces it
    answers with (pydevd's exclude filters), whatever `justMyCode` says: the user's frames and the
    libraries' (torch) stay as `justMyCode` decides."""
    return [{"path": path, "include": False} for path in _DEBUGGER_EXCLUDED_PATHS]


def hidden_frames_line(count: int) -> str:
    """The line that takes the hidden frames' place, worded like Python's own
    `[Previous line repeated N more times]`."""
    return f"  [{count} frame{'' if count == 1 else 's'} of traindoctor, the debugger or runpy hidden]\n"


def hide_internal_frames(text: str) -> tuple[str, int]:
    """`text` with every internal frame (its `  File` line and the source and caret lines under it)
    removed, and the number removed. A traceback that lost frames gets `hidden_frames_line` under its
    header (at its first frame when the header is missing)."""
    out: list[str] = []
    total = 0
    note_at: int | None = None  # where the current traceback's note goes
    hidden_here = 0
    skipping = False

    def close() -> None:
        nonlocal note_at, hidden_here
        if hidden_here and note_at is not None:
            out.insert(note_at, hidden_frames_line(hidden_here))
        note_at, hidden_here = None, 0

    for line in text.splitlines(keepends=True):
        match = _FILE_LINE.match(line)
        if match:
            if note_at is None:
                note_at = len(out)
            skipping = is_internal_path(match.group("path"))
            if skipping:
                hidden_here += 1
                total += 1
                continue
        elif skipping and line.startswith("    "):
            continue  # the hidden frame's source line and carets
        else:
            skipping = False
            if line.startswith(_HEADER):
                close()
                out.append(line)
                note_at = len(out)
                continue
            if not line.startswith(" "):  # the message (or a chain line) ends the frame list
                close()
        out.append(line)
    close()
    return "".join(out), total


def print_exception(exc_type: type[BaseException], exc: BaseException, tb: object) -> None:
    """A `sys.excepthook`: the traceback Python would print, less the internal frames."""
    try:
        text, _ = hide_internal_frames("".join(traceback.format_exception(exc_type, exc, tb)))
        sys.stderr.write(text)
        sys.stderr.flush()
    except Exception:  # never lose the user's traceback to ours
        sys.__excepthook__(exc_type, exc, tb)


def install_excepthook() -> None:
    """Print the process's uncaught exception through `print_exception`, unless something else
    (the user's code, IPython, rich) already replaced Python's own hook."""
    if sys.excepthook is sys.__excepthook__:
        sys.excepthook = print_exception


def excepthook_expression() -> str:
    """A DAP `evaluate` expression that runs this file in a fresh namespace of the stopped
    debuggee and installs its excepthook there (its value: None)."""
    with open(__file__, encoding="utf-8") as handle:
        code = handle.read() + "\ninstall_excepthook()\n"
    return ("(lambda __td: (exec(compile(" + repr(code) + ", '<frozen traindoctor.internal_frames>', 'exec'), __td),"
            " None)[1])({'__name__': 'traindoctor_internal_frames'})")
