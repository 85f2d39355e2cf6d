"""Raw log text -> clean lines: the noise a training log wraps tracebacks in.

Removes ANSI colour codes, splits tqdm carriage-return redraws into lines,
strips logging prefixes and timestamps (keeping relative indentation, which
the parser needs), records and strips distributed rank prefixes
(`[rank1]:`, `[default0]:`, `[1,0]<stderr>:`), unwraps rich-formatted
traceback boxes and Python 3.11 exception-group bars, and unpacks an elastic
error file (JSON with `py_callstack`).

Also reads what people paste into issues: markdown emphasis around a line
(`_**RuntimeError: ...**_`), inline-code backticks, `> ` quoting, a logger's
`repr()` of a traceback (literal `\\n`), `srun --label` rank prefixes
(`0: Traceback ...`), pytest's `E   ` lines, Ray's `(Worker pid=N)` prefixes, and
VS Code's "Exception has occurred:" layout (message first, innermost frame first;
also in Chinese), which is rewritten into a standard traceback.

And what a paste does to a traceback: a whole paste indented (a markdown code block), a
launcher's prefix on every relayed line, HTML-escaped text, frame lines hard-wrapped by a
terminal, rich boxes wrapped inside a frame header, drawn with square corners and `>`, or with
their box characters lost to U+FFFD.
"""

from __future__ import annotations

import html
import json
import os
import re
from typing import NamedTuple

from .markers import BOX_CLOSE, BOX_OPEN, BOX_START, RICH_BAR

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# A traceback whose newlines were lost: frames glued onto one line (` File "a.py", line 3, in f ...`).
_GLUED_FRAME = re.compile(r'(?<=\S) +(?=File "[^"\n]+", line \d+, in )')
_GLUED_FRAME_HEAD = re.compile(r'(File "[^"\n]+", line \d+, in [\w<>.]+) *(.*)')
_GLUED_EXCEPTION = re.compile(r'(?:^|\s)(?=(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit): )')
_CARET_RUN = re.compile(r'(?:^|\s)[~^]{3,}(?=\s|$)')
_RANK = re.compile(r"^\[(?:rank|default)(\d+)\]:\s?|^\[\d+,(\d+)\]<std(?:out|err)>:\s?")
# Timestamps ("2022-12-28 16:13:02", "[2024-01-01 12:00:00,123]", "12:00:01.123"),
# glog ("E1202 09:47:41.166000 6753 file.py:1002]"), levels ("[ERROR]", "ERROR:root:",
# "| ERROR |", " - ERROR - "), each optional; at least one must be present.
_TIMESTAMP = (
    r"\[?\d{4}[-/]\d{2}[-/]\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?"
    r"|\[?\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?"
)
_LEVEL = r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)"
_PREFIX = re.compile(
    rf"^(?:(?:{_TIMESTAMP})(?:\s*(?:\[[\w.:-]+\]|[-|]\s*[\w.]+(?=\s*[-|])|{_LEVEL}\b:?(?:[\w.]+:)?))*(?:\s*[-|:](?=\s))?\s?"
    rf"|\[{_LEVEL}\]\s?|{_LEVEL}:[\w.<>]*:\s?"
    r"|[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+\s+\S+:\d+\]\s?"
    rf"|{_LEVEL} \d{{2}}-\d{{2}} \d{{2}}:\d{{2}}:\d{{2}}(?:\.\d+)? \[?[\w.-]+:\d+\]\s?"
    r"|\[[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+ \S+:\d+\]\s?)"
)
# The logger's source file inside a stripped prefix (glog `... torch/_dynamo/exc.py:525]`, `[fused_optimizer.py:314:_update_scale]`).
_ORIGIN = re.compile(r"([\w./\\-]+\.py:\d+)[\]:]")
# A record logged below warning level (glog's I/V/D letter, INFO, DEBUG): what it says is no failure,
# so its origin is not kept (TORCH_LOGS=+dynamo prints thousands of healthy INFO records).
_QUIET_LEVEL = re.compile(r"^\[?[IVD]\d{4} |\b(?:INFO|DEBUG)\b")
# A line wrapped in markdown emphasis or inline code: `**...**`, `_**...**_`, `` `...` ``.
_EMPHASIS = re.compile(r"^(?P<open>_?\*{1,3}_?|`{1,3})(?P<inner>.*?\S.*?)(?P<close>_?\*{1,3}_?|`{1,3})\s*$")
_ITALIC = re.compile(r"^_(?P<inner>(?:[\w.]+(?:Error|Exception|Warning)\b.*|Traceback \(most recent call last\):|File \".*))_\s*$")
# Bold that closes mid-line (`**RuntimeError: CUDA out of memory.** Tried to allocate ...`).
_LEADING_BOLD = re.compile(r"^(?P<u>_?)(?P<stars>\*{2,3})(?P<inner>[^*]+?)(?P=stars)(?P=u)(?P<rest>(?:[\s:].*)?)$")
# Ray prefixes every line of a worker's output: `(RayWorkerVllm pid=7602) `, `(pid=123, ip=10.0.0.1) `.
_RAY = re.compile(r"^\((?:[\w.-]+ )?(?:rank=\d+ )?pid=\d+(?:, ip=[\d.]+)?\)\s?")
# Ray's log deduplication suffix: `... [repeated 6x across cluster]`.
_RAY_REPEATED = re.compile(r" \[repeated \d+x across cluster\]$")
# Notebook frames pasted with their links (Colab, VS Code, Jupyter in a browser):
# `[<ipython-input-4-..>](https://localhost:8080/#)`, `[line 592](vscode-notebook-cell:?...)`,
# `[3695](https://file+.vscode-resource.vscode-cdn.net/...)`: the link text is what was printed.
_NOTEBOOK_LINK = re.compile(r"\[([^\]\n]*)\]\((?:https?://localhost|vscode-notebook-cell:|file:|https://file\+|"
                            r"https?://vscode-remote|vscode-remote)[^)\s]*\)")
# A paste with the viewer's line numbers kept: `[1860] frame #1: ...`.
_LINE_NUMBER = re.compile(r"^\[\d{1,6}\] ")
_LINE_NUMBERED = re.compile(r"(?m)^\[\d{1,6}\] ")
# pytest's failure report: `E   RuntimeError: ...` (and bare `E` for blank lines).
_PYTEST_E = re.compile(r"^E(?: {3,}|$)")
_PYTEST_REPORT = re.compile(r"(?m)^E {3,}\S")
# `srun --label` / deepspeed-style "N: " rank prefixes; used only when tracebacks carry them.
_LABEL = re.compile(r"^\s{0,3}(\d{1,4}): ")
_LABELLED_TRACEBACK = re.compile(r"(?m)^\s{0,3}\d{1,4}: (?:Traceback \(most recent|\s*File \")")
# Markdown around pasted lines: quoting, emphasis or inline code at a line start.
_PASTED = re.compile(r"(?m)^[ \t]*(?:>|\*\*|_\*|__\*|_[A-Za-z]\w*(?:Error|Exception)\b|_Traceback|_File|`|~~~)")
_HTML_ESCAPED = re.compile(r'File &quot;|&lt;module&gt;|^\s*&gt; |&#39;\w+&#39;', re.M)
_FENCE = re.compile(r"^\s*(?:```|~~~)[\w+-]*\s*$")
# VS Code's exception widget header, in the display languages seen in pasted reports.
_VSCODE = ("Exception has occurred:", "发生异常:")
_RICH_BAR = RICH_BAR
_RICH_EDGE = re.compile(r"^\s*[╭╰][─\s\w()]*[╮╯]\s*$")
_RICH_FRAME = re.compile(r"^(?P<path>\S.*?):(?P<line>\d+) in (?P<func>\S+)\s*$")
_RICH_FRAME_WRAPPED = re.compile(r"^(?P<path>\S.*?):(?P<line>\d+) in$")
_RICH_CODE = re.compile(r"^[❱>]\s*(?P<line>\d+)\s*│\s?(?P<code>.*)$")  # `>` where the console lacks ❱
# A frame header rich wrapped inside the path or the line number: "…/dataloader.py" / ":444 in __iter__",
# "…/state_dict.py:83" / "4 in set_optimizer_state_dict".
_RICH_PATH_HEAD = re.compile(r"^(?:[A-Za-z]:[\\/]|[/\\~]|\.{1,2}[/\\])\S*$")
_RICH_LINE_END = re.compile(r"\.\w+:\d+$")  # a wrapped header that ends in its line number
# A box whose characters the paste's encoding lost: every bar (and the ❱ marker) became U+FFFD.
_LOST_BOX_LINE = re.compile(r"\ufffd\s+\d+\s+\ufffd")  # a source line of the box: bar, line number, bar
_LOST_MARKER = re.compile(r"^(\s*)\ufffd(\s+)\ufffd(\s*\d+\s)")
# A launcher's prefix on every line of a traceback it relays (`SUBPROCESS: `, `worker-3: `).
_RELAY_PREFIX = re.compile(r"^([A-Za-z][\w.-]{1,30}): ")
_RELAYED = re.compile(r"^\s*(?:Traceback \(most recent|File \"|[│╭╰┌└]|-{20,}$|\w+ +Traceback \(most recent|Cell In ?\[)")
_GROUP_BAR = re.compile(r"^(\s*)[|+]-?[+-]*(?:-+ \d+ -+|-+ \.\.\. -+)?\s?")


class Line(NamedTuple):  # a tuple: a million of them are built per large log
    text: str  # cleaned; relative indentation preserved
    rank: int | None  # from a rank prefix
    number: int  # 0-based index of the line it came from, in the text read (a long log: its failure regions, joined)
    prefixed: bool = False  # a logging prefix or timestamp was stripped: a new log record
    origin: str = ""  # the source file the stripped prefix named (glog's `torch/_dynamo/exc.py:525`): who logged it


def decode(data: bytes) -> str:
    """Bytes of any encoding -> text; never raises (bad bytes become U+FFFD)."""
    if data.startswith(b"\xff\xfe") or data.startswith(b"\xfe\xff"):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8", errors="replace")


_JSON_OPENING = re.compile(r"\s*\{")
_ONLY_NEWLINES = re.compile(r"\n*\Z")


def unpack_error_file(text: str) -> str:
    """An elastic error file holds the traceback as JSON; return it as text."""
    opening = _JSON_OPENING.match(text)  # not text.strip(): that copies a whole log
    if opening is None or '"message"' not in text[opening.end() - 1:opening.end() + 1999]:
        return text
    stripped = text.strip()
    try:
        data = json.loads(stripped)
    except ValueError:
        return text
    message = data.get("message") if isinstance(data, dict) else None
    if not isinstance(message, dict):
        return text
    info = message.get("extraInfo") or {}
    callstack = info.get("py_callstack") if isinstance(info, dict) else None
    if isinstance(callstack, str) and callstack.strip():
        return callstack
    if isinstance(message.get("message"), str):
        return message["message"]
    return text


def _unrepr(text: str) -> str:
    """Lines holding a repr()'d traceback (`'Traceback (most recent call last):\\n  File ...'`)
    become real lines."""
    out = []
    for raw in text.split("\n"):
        if "\\n" in raw and ("Traceback (most recent call last):\\n" in raw or 'File \\"' in raw
                              or re.search(r'\\n\s+File "', raw)):
            raw = raw.replace("\\n", "\n")
            raw = raw.replace('\\"', '"').replace("\\'", "'").replace("\\t", "    ").replace("\\\\", "\\")
        out.append(raw)
    return "\n".join(out)


def _unquote(line: str) -> str:
    """Markdown quoting (`> `, `> > `) and emphasis or inline code around the whole line."""
    while line.startswith(">"):
        line = line[1:]
        if line.startswith(" "):
            line = line[1:]
    first = line.lstrip()[:1]
    if first in ("*", "_", "`"):
        indent = line[:len(line) - len(line.lstrip())]
        body = line.lstrip()
        found = _EMPHASIS.match(body)
        if found and (("*" in found.group("open")) == ("*" in found.group("close"))):
            return indent + found.group("inner").rstrip("*_` ")
        found = _ITALIC.match(body)
        if found:
            return indent + found.group("inner")
        found = _LEADING_BOLD.match(body)
        if found:
            return indent + found.group("inner") + found.group("rest")
    if line.count("`") % 2:
        # inline code that spans lines: its opening or closing backtick is alone on this line
        stripped = line.strip()
        if stripped.startswith("`") and not stripped.startswith("``"):
            return line.replace("`", "", 1)
        if stripped.endswith("`") and not stripped.endswith("``"):
            return line.rstrip()[:-1]
    return line


def normalize(text: str) -> list[Line]:
    """Clean lines of the regions of `text` where a failure can be (anchors.py): the whole
    of a short log; the lines around tracebacks, known log lines and the tail of a long one.
    `Line.number` counts the lines of those regions, joined."""
    from .anchors import regions

    text = unpack_error_file(text)
    if "&" in text and _HTML_ESCAPED.search(text[:200_000]):
        text = html.unescape(text)  # a traceback copied from a page's HTML source
    found = regions(text)
    if len(found) > 1 or found and (found[0].start > 0 or not _ONLY_NEWLINES.match(text, found[0].end)):
        text = "\n".join(text[r.start:r.end] for r in found)
    return _normalize_lines(text)


def _normalize_lines(text: str) -> list[Line]:
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    text = text.replace("\r\n", "\n")
    if 'File "' in text and _GLUED_FRAME.search(text):
        text = _unfold_glued_frames(text)
    if "\\n" in text:
        text = _unrepr(text)
    if 'File "' in text and _FAULT_FRAME.search(text):
        text = _faulthandler(text)
    labelled = len(_LABELLED_TRACEBACK.findall(text[:2_000_000])) >= 2
    pasted = _PASTED.search(text) is not None
    pytest = len(_PYTEST_REPORT.findall(text[:2_000_000])) >= 2
    numbered = len(_LINE_NUMBERED.findall(text[:200_000])) >= 3
    if "](" in text:
        text = _NOTEBOOK_LINK.sub(r"\1", text)
    if "\t" in text:
        text = text.replace("\t", "    ")
    text = _CONTROL.sub("", text)
    indent = _common_indent(text)
    if indent:  # a markdown indented code block, or a paste indented as a whole
        text = re.sub(rf"(?m)^ {{{indent}}}", "", text)
    relay = _relay_prefix(text)
    lost_box = len(_LOST_BOX_LINE.findall(text[:200_000])) >= 3
    boxed = lost_box or _RICH_BAR in text
    lines: list[Line] = []
    in_rich = False
    rich_path: tuple[str, str] | None = None  # a frame header rich wrapped onto two lines
    for number, raw in enumerate(text.split("\n")):
        # tqdm redraws the bar with \r: every redraw is its own line.
        for segment in raw.split("\r") if "\r" in raw else (raw,):
            if relay is not None and segment.startswith(relay):
                segment = segment[len(relay):]
            if not segment:
                continue
            if pasted and _FENCE.match(segment.lstrip("> ")):
                continue  # a markdown code fence around the pasted traceback
            line = _unquote(segment) if pasted else segment
            if pytest and _PYTEST_E.match(line):
                line = line[1:].lstrip(" ")
            if numbered:
                line = _LINE_NUMBER.sub("", line, count=1)
            if line.startswith("(") and "pid=" in line[:80]:
                line = _RAY.sub("", line, count=1)
                if line.endswith("across cluster]"):
                    line = _RAY_REPEATED.sub("", line)
            rank = None
            if labelled:
                found = _LABEL.match(line)
                if found:
                    rank = int(found.group(1))
                    line = line[found.end():]
            if line.startswith("["):
                found = _RANK.match(line)
                if found:
                    rank = int(found.group(1) or found.group(2))
                    line = line[found.end():]
            prefixed = False
            origin = ""
            if line and (line[0].isdigit() or line[0] in "[IWEFDC" or line.lstrip()[:1] == "["):
                found = _PREFIX.match(line)
                if found and found.end() > 0:
                    named = _ORIGIN.search(found.group(0))
                    origin = named.group(1) if named and not _QUIET_LEVEL.search(found.group(0)) else ""
                    line = line[found.end():]
                    prefixed = True
            if (prefixed or rank is not None) and line[:1] in ("*", "_", "`"):
                line = _unquote(line)  # markdown inside a log record or a rank's line: `... ERROR - **Killed**`
            if (prefixed or rank is not None) and (not line.strip() or (pasted and _FENCE.match(line.lstrip("> ")))):
                continue  # a record its prefix leaves empty, or a fence in it: skipped as the bare line is
            if lost_box and line.lstrip().startswith("\ufffd"):
                line = _LOST_MARKER.sub("\\1│\\2❱\\3", line, count=1).replace("\ufffd", _RICH_BAR)
            first = line.lstrip()[:1]
            if boxed and not in_rich and first not in BOX_START and _lost_its_bar(line):
                line = f"{_RICH_BAR} {line.strip()}"  # a frame header whose bar the paste lost
                first = _RICH_BAR
            if in_rich or first in BOX_START:
                converted, in_rich, rich_path = _rich(line.strip(), in_rich, rich_path)
                lines.extend(Line(c, rank, number) for c in converted)
                continue
            if first in _GROUP_START:
                stripped = line.lstrip()
                if stripped[1:2] in (" ", "-", "+", ""):
                    line = _GROUP_BAR.sub(r"\1", line, count=1)
            lines.append(Line(line.rstrip(), rank, number, prefixed, origin))
    if any(header in text for header in _VSCODE):
        lines = _vscode(lines)
    if 'File "' in text:
        lines = _rejoin_wrapped_frames(lines)
    return lines


# faulthandler's dump (a fatal signal, faulthandler.dump_traceback): `  File "x.py", line 166 in get`, no
# comma, innermost frame first, under `Current thread 0x... (most recent call first):`.
_FAULT_FRAME = re.compile(r'(?m)^(?P<indent>\s*)File "(?P<path>[^"\n]+)", line (?P<line>\d+) in (?P<func>[\w<>.]+)\s*$')
_FAULT_HEADER = re.compile(r"^\s*(?:Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\):\s*$")


def _faulthandler(text: str) -> str:
    """Each run of two or more faulthandler frame lines as a Python traceback prints them: outermost
    first, `, in func`, the run's header (if pasted) as the traceback's; the line count unchanged."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and _FAULT_FRAME.match(lines[j]):
            j += 1
        if j - i >= 2:
            frames = [_FAULT_FRAME.match(line) for line in lines[i:j]]
            lines[i:j] = [f'{m["indent"]}File "{m["path"]}", line {m["line"]}, in {m["func"]}' for m in reversed(frames)]
            if i > 0 and _FAULT_HEADER.match(lines[i - 1]):
                lines[i - 1] = "Traceback (most recent call last):"
        i = max(j, i + 1)
    return "\n".join(lines)


def _unfold_glued_frames(text: str) -> str:
    """Each frame of a line holding two or more glued frames back on a line of its own, with its
    source line under it and the exception after the last one (caret runs dropped)."""
    out: list[str] = []
    for line in text.split("\n"):
        parts = _GLUED_FRAME.split(line)
        if len(parts) < 3:
            out.append(line)
            continue
        for part in parts:
            head = _GLUED_FRAME_HEAD.match(_CARET_RUN.sub(" ", part).lstrip())
            if head is None:
                out.append(part)
                continue
            out.append("  " + head.group(1))
            code = head.group(2).strip()
            exception = _GLUED_EXCEPTION.search(code)
            if exception is not None:
                code, message = code[:exception.start()].strip(), code[exception.start():].strip()
            if code:
                out.append("    " + code)
            if exception is not None:
                out.append(message)
    return "\n".join(out)


_FRAME_START = re.compile(r'^\s*File "')
_FRAME_WHOLE = re.compile(r'^\s*File "[^"]*", line \d+(?:, in \S.*)?$')


def _rejoin_wrapped_frames(lines: list[Line]) -> list[Line]:
    """A frame line hard-wrapped by a terminal or a paste (`File "/long/pa` + `th.py", line 3, in f`,
    `..., line 912, in` + `prepare_model`): the unindented continuation is joined back, when the
    joined line is a whole frame line."""
    out: list[Line] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if _FRAME_START.match(line.text) and not _FRAME_WHOLE.match(line.text.rstrip()):
            joined, j = [line.text], i  # the wrap may have eaten a space (the lines are right-stripped)
            while j + 1 < n and j - i < 2 and lines[j + 1].text[:1] not in ("", " "):
                j += 1
                joined = [head + glue + lines[j].text for head in joined for glue in ("", " ")]
                whole = next((text for text in joined if _FRAME_WHOLE.match(text.rstrip())), None)
                if whole is not None:
                    out.append(line._replace(text=whole.rstrip()))
                    i = j + 1
                    break
            else:
                out.append(line)
                i += 1
            continue
        out.append(line)
        i += 1
    return out


_FRAME_LINE = re.compile(r'^\s*File "[^"]*", line \d+')


def _vscode(lines: list[Line]) -> list[Line]:
    """VS Code's exception widget, pasted: `Exception has occurred: Type`, the message,
    then frames innermost first. Rewritten as a standard traceback."""
    out: list[Line] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        header = next((h for h in _VSCODE if h in line.text), None)
        if header is None:
            out.append(line)
            i += 1
            continue
        at = line.text.find(header)
        exc_type = re.sub(r"\s*\(note:.*$", "", line.text[at + len(header):]).strip() or "Exception"
        j = i + 1
        message: list[Line] = []
        while j < n and not _FRAME_LINE.match(lines[j].text) and len(message) < 60:
            message.append(lines[j])
            j += 1
        frames: list[list[Line]] = []
        while j < n and _FRAME_LINE.match(lines[j].text):
            group = [Line("  " + lines[j].text.strip(), lines[j].rank, lines[j].number)]
            j += 1
            while j < n and lines[j].text.strip() and not _FRAME_LINE.match(lines[j].text) \
                    and lines[j].text.startswith(" "):
                group.append(Line("    " + lines[j].text.strip(), lines[j].rank, lines[j].number))
                j += 1
            frames.append(group)
        while message and not message[-1].text.strip():
            message.pop()
        head = message[0].text.strip() if message else ""
        if not frames:
            # only the widget's header and message were copied: the exception without frames
            out.append(Line(f"{exc_type}: {head}".rstrip(": ") if head else exc_type, line.rank, line.number))
            out.extend(message[1:])
            i = j
            continue
        out.append(Line("Traceback (most recent call last):", line.rank, line.number))
        for group in reversed(frames):
            out.extend(group)
        out.append(Line(f"{exc_type}: {head}".rstrip(": ") if head else exc_type, line.rank, line.number))
        out.extend(message[1:])
        i = j
    return out


_RANK_BAR = _RICH_BAR
_GROUP_START = ("|", "+")


def _rich(stripped: str, in_rich: bool, rich_path: tuple[str, str] | None
          ) -> tuple[list[str], bool, tuple[str, str] | None]:
    """One line of a rich traceback box -> plain traceback lines.

    rich prints `╭─ Traceback (most recent call last) ─╮`, then per frame
    `│ /path/file.py:12 in func │` and source lines with `❱ 12 │ code` marking
    the failing one, and closes the box with `╰─...─╯`; the exception follows.
    """
    if stripped.startswith(BOX_OPEN):
        if "Traceback" in stripped:
            return ["Traceback (most recent call last):"], True, None
        return [], in_rich, rich_path  # a nested box (locals)
    if stripped.startswith(BOX_CLOSE):
        return [], False, None
    if not stripped.startswith(_RICH_BAR):
        return [stripped], False, None
    inner = stripped.strip(_RICH_BAR + " ")
    if rich_path is not None and not rich_path[1]:
        if not inner:
            return [], in_rich, rich_path  # the rest of a wrapped path comes after a blank box line
        joined = rich_path[0] + inner
        frame = _RICH_FRAME.match(joined)
        if frame is None and _RICH_LINE_END.search(rich_path[0]):
            # wrapped at the space after the line number: "…/dataloader.py:634" / "in __next__"
            joined = f"{rich_path[0]} {inner}"
            frame = _RICH_FRAME.match(joined)
        if frame:
            return [f'  File "{frame.group("path")}", line {frame.group("line")}, in {frame.group("func")}'], True, None
        wrapped = _RICH_FRAME_WRAPPED.match(joined)
        if wrapped:
            return [], True, (wrapped.group("path"), wrapped.group("line"))
        rich_path = None
    if rich_path is not None and inner and " " not in inner:
        # rich wrapped a long frame header: "path:line in" / "function"
        return [f'  File "{rich_path[0]}", line {rich_path[1]}, in {inner}'], True, None
    if not inner or inner.startswith((*BOX_OPEN, *BOX_CLOSE, _RICH_BAR)):
        return [], in_rich, rich_path
    wrapped = _RICH_FRAME_WRAPPED.match(inner)
    if wrapped:
        return [], True, (wrapped.group("path"), wrapped.group("line"))
    code = _RICH_CODE.match(inner)
    if code:
        # rich draws indentation guides as bars: drop them from the source line
        return ["    " + code.group("code").lstrip(" " + _RICH_BAR).rstrip(" " + _RICH_BAR)], in_rich, rich_path
    frame = _RICH_FRAME.match(inner)
    if frame:
        return [f'  File "{frame.group("path")}", line {frame.group("line")}, in {frame.group("func")}'], True, None
    if _RICH_PATH_HEAD.match(inner):
        return [], True, (inner, "")  # a path rich wrapped before its line number ends
    return [], in_rich, rich_path


_INDENT = re.compile(r"(?m)^( *)(?=\S)")


def _common_indent(text: str) -> int:
    """The indentation every non-blank line of the text shares."""
    common = None
    for found in _INDENT.finditer(text):
        width = len(found.group(1))
        common = width if common is None else min(common, width)
        if common == 0:
            return 0
    return common or 0


def _lost_its_bar(line: str) -> bool:
    """`/path/file.py:12 in func │`: a rich frame header that lost its opening bar."""
    inner = line.strip().rstrip(_RICH_BAR + " ")
    frame = _RICH_FRAME.match(inner)
    return frame is not None and _RICH_PATH_HEAD.match(frame.group("path").replace(" ", "")) is not None


def _relay_prefix(text: str) -> str | None:
    """The prefix a launcher writes before every line it relays: a `TAG: ` on at least half of the
    lines, the traceback among them (or an upper-case tag on nearly every line of a log without
    one), else a longer prefix every frame line shares (_shared_frame_prefix). None when there is none."""
    counts: dict[str, int] = {}
    relayed: set[str] = set()
    total = 0
    for line in text[:200_000].split("\n")[:2000]:
        if not line.strip():
            continue
        total += 1
        found = _RELAY_PREFIX.match(line)
        if found is None:
            continue
        counts[found.group(0)] = counts.get(found.group(0), 0) + 1
        if _RELAYED.match(line[found.end():]):
            relayed.add(found.group(0))
    best = max(relayed, key=lambda p: counts[p], default=None)
    if best is not None and counts[best] >= max(3, total // 2):
        return best
    # a log without a traceback: an upper-case tag (`SUBPROCESS: `) on nearly every line
    tag = max((p for p in counts if p[:-2].replace("_", "").replace("-", "").isupper()), key=lambda p: counts[p],
              default=None)
    if tag is not None and counts[tag] >= max(3, total * 9 // 10):
        return tag
    return _shared_frame_prefix(text, total)


def _shared_frame_prefix(text: str, total: int) -> str | None:
    """A prefix every frame line shares, character for character, and at least half of all lines
    start with: a launcher's stacked prefixes (`<time> [Error] (EngineCore pid=7) ERROR <time>
    [core.py:1136] `) that no pattern for one prefix strips. It ends before the frame's indentation."""
    frame_lines = [line for line in text[:200_000].split("\n")[:2000] if 'File "' in line]
    if len(frame_lines) < 2:
        return None
    common = os.path.commonprefix(frame_lines)
    at = common.find('File "')
    # inline code or emphasis opened after the prefix (`` [rank3]: `  File ... ` ``) is the line's own
    head = (common[:at] if at >= 0 else common).rstrip().rstrip("`*_").rstrip()
    if len(head) < 8 or head.startswith(("Traceback", "File")):
        return None
    for known in (_RANK, _RAY, _LABEL, _PREFIX):  # one prefix the line cleaning reads (a rank) and strips
        found = known.match(head + " ")
        if found is not None and found.end() >= len(head):
            return None
    prefix = head + " "
    starting = sum(1 for line in text[:200_000].split("\n")[:2000] if line.startswith(prefix))
    return prefix if starting >= max(3, total // 2) else None
