"""Clean lines -> tracebacks: blocks of frames ending in an exception, linked into chains.

Reads standard Python tracebacks (3.8-3.13, with `^^^` markers), chained
exceptions ("direct cause" / "during handling"), DataLoader re-raises
("Original Traceback"), tracebacks embedded with an indent (torchrun's
failure summary), frames without a header (a log that starts mid-traceback),
IPython/Jupyter tracebacks (`Cell In[3], line 5`, `----> 5`, old
`<ipython-input-3-...>`), and a bare `Type: message` line. Lines of each rank
are parsed as their own stream, so interleaved ranks do not mix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..model import ExceptionInfo, Frame, Traceback
from .markers import BARE_TYPE_SUFFIXES, HEADER
from .normalize import Line, normalize
from .user_frame import is_user_path

_FRAME = re.compile(r'^(?P<indent>\s*)File "(?P<path>[^"]*)", line (?P<line>\d+)(?:, in (?P<func>.+?))?\s*$')
_CARET = re.compile(r"^[\s~^]+$")
_EXC = re.compile(r"^(?P<type>[A-Za-z_][\w]*(?:(?:\.|::)[A-Za-z_]\w*)*)(?::(?:\s?(?P<msg>.*)))?$")
_STRONG_TYPE = re.compile(r"(?:Error|Exception|Exit|Interrupt|Iteration|Warning|Failure|Fault|Timeout|Group)$")
# A `Type: message` line with no frames counts only for failures, not warnings.
_BARE_TYPE = re.compile(f"(?:{'|'.join(BARE_TYPE_SUFFIXES)})$")
_CAUSE = "The above exception was the direct cause of the following exception"
_CONTEXT = "During handling of the above exception, another exception occurred"
# IPython / Jupyter
_IPY_HEADER = re.compile(r"^\s*(?P<type>[A-Za-z_][\w.]*)\s+Traceback \(most recent call last\)\s*$")
_IPY_CELL = re.compile(r"^(?P<path>Cell In\s?\[\d+\]), line (?P<line>\d+)(?:, in (?P<func>.+))?$")
_IPY_INPUT = re.compile(r"^(?P<path>Input In \[\d+\]|<ipython-input-\d+-[0-9a-f]+>),? in (?P<func>.+?)(?:\(.*\))?$")
_IPY_FILE = re.compile(r"^File (?P<path>.+?):(?P<line>\d+), in (?P<func>.+)$")
# IPython 7's `path in func(args)`; a path from a root (`~\`, `C:\`, `/`) may hold spaces (Windows folders).
_IPY_OLD_FILE = re.compile(r"^(?P<path>\S+\.py|(?:~|[A-Za-z]:)?[/\\][^<>\"|?*]*?\.py) in (?P<func>[\w<>.]+)\(.*$")
_IPY_ARROW = re.compile(r"^\s*-*>\s*(?P<line>\d+)\s?(?P<code>.*)$")
_IPY_CONTEXT = re.compile(r"^\s+\d+\s")

_MAX_MESSAGE_LINES = 200
# A line that starts a new log record ends a multi-line exception message: a logging level
# (`ERROR ...`, `[INFO] ...`), a date, training progress, a tqdm bar.
LOG_RECORD = re.compile(
    r"^\s*\[?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b|^\s*\d{4}-\d\d-\d\d"
    r"|^\S.*?\b(?:[Ee]poch|[Ss]tep|[Ii]ter)\b\s*[:=#]?\s*\d|\d+%\|"
)

@dataclass(frozen=True)
class Block:
    """One printed traceback: frames, then the exception that ended it."""

    exception: ExceptionInfo | None
    frames: tuple[Frame, ...]
    relation: str  # link to the previous block: "", "cause", "context" or "original"
    rank: int | None
    start: int  # index of its first line in the normalised lines
    end: int  # index after its last line
    intro: str = ""  # the line before it (e.g. the anomaly-mode warning)


@dataclass(frozen=True)
class Chain:
    """Blocks printed for one failure, in print order."""

    blocks: tuple[Block, ...]

    @property
    def rank(self) -> int | None:
        return self.blocks[0].rank

    @property
    def start(self) -> int:
        return self.blocks[0].start

    @property
    def end(self) -> int:
        return self.blocks[-1].end

    @property
    def final(self) -> Block:
        """The exception that ended the program: the outer one of a worker
        re-raise, the last one of a cause/context chain."""
        last = len(self.blocks) - 1
        while last > 0 and self.blocks[last].relation == "original":
            last -= 1
        return self.blocks[last]

    @property
    def frames(self) -> tuple[Frame, ...]:
        return tuple(f for b in self.blocks for f in b.frames)

    def to_traceback(self, lines: list[Line] | None = None) -> Traceback:
        final = self.final
        raw = "\n".join(l.text for l in lines[self.start:self.end]) if lines else ""
        return Traceback(
            exception=final.exception,
            frames=self.frames,
            chain=tuple(b.exception for b in self.blocks if b is not final and b.exception),
            rank=self.rank,
            raw=raw,
        )


def parse_tracebacks(text: str) -> list[Traceback]:
    """Every traceback chain in `text`, in order of appearance."""
    lines = normalize(text)
    return [chain.to_traceback(lines) for chain in parse_chains(lines)]


# A frame line without its `File "` (a paste cut at the start of the line) or quoted in prose:
# `deepglr.py", line 484, in supporting_matrix`, `... happen to "..\\utils\\cb.py", line 51, in on_end`.
_FRAME_FRAGMENT = re.compile(r'(?:^|")(?P<path>[^"\n]*?[\w.\\/-]+\.pyw?)", line (?P<line>\d+), in (?P<func>[\w<>.]*\w>?)')


def frame_fragments(lines: list[Line]) -> list[Frame]:
    """Frames a paste names only in fragments (no `File "` at their start), for pastes whose
    tracebacks parse to no frame at all; in the order printed."""
    out = []
    for line in lines:
        for found in _FRAME_FRAGMENT.finditer(line.text):
            path = found.group("path").strip()
            if path.startswith("File "):
                continue  # a whole frame line: the parser's own
            if found.group(0)[0] != '"' and not re.search(r"[/\\]", path):
                continue  # cut at the line's start to a bare file name: whose file it is was cut too
            out.append(Frame(path, int(found.group("line")), found.group("func"), None, is_user_path(path)))
    return out


def parse_chains(lines: list[Line]) -> list[Chain]:
    streams: dict[int | None, list[int]] = {}
    for index, line in enumerate(lines):
        streams.setdefault(line.rank, []).append(index)
    chains: list[Chain] = []
    for rank, indices in streams.items():
        chains.extend(_parse_stream(lines, indices, rank))
    chains.sort(key=lambda c: c.start)
    return chains


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


def _parse_stream(lines: list[Line], indices: list[int], rank: int | None) -> list[Chain]:
    texts = [lines[i].text for i in indices]
    n = len(texts)
    blocks: list[Block] = []
    pending = ""
    pending_age = 0
    i = 0
    while i < n:
        text = texts[i]
        if HEADER in text:
            relation = "original" if "Original Traceback" in text else pending
            ipython = _IPY_HEADER.match(text) is not None
            parse = _parse_ipython if ipython else _parse_block
            block, i = parse(lines, indices, texts, i + 1, rank, relation, text)
            blocks.append(block)
            pending = ""
            continue
        if _FRAME.match(text):
            block, i = _parse_block(lines, indices, texts, i, rank, "", _previous(texts, i))
            blocks.append(_outermost_first(block))
            pending = ""
            continue
        if _ipython_frame_without_header(texts, i):
            block, i = _parse_ipython(lines, indices, texts, i, rank, "", _previous(texts, i))
            blocks.append(block)
            pending = ""
            continue
        if _CAUSE in text:
            pending, pending_age = "cause", 0
        elif _CONTEXT in text:
            pending, pending_age = "context", 0
        elif text.strip():
            pending_age += 1
            if pending_age > 2:
                pending = ""
            bare = _bare_exception(text)
            if bare is not None:
                message, i = _message(lines, indices, texts, i, bare)
                exc = ExceptionInfo(bare.group("type"), message)
                blocks.append(Block(exc, (), "", rank, indices[i - 1], indices[i - 1] + 1))
                continue
        i += 1
    return _link(_message_before_frames(blocks))


_MESSAGE_TO_FRAMES = 12  # lines between a message and the frames printed after it


def _message_before_frames(blocks: list[Block]) -> list[Block]:
    """An exception printed before its frames (ComfyUI's "Error occurred when executing X:",
    then the message, then the frames without a header; a logger that prints str(e) and then
    the stack): an exception without frames and, right after it, frames without an exception
    are one traceback."""
    out: list[Block] = []
    i = 0
    while i < len(blocks):
        block = blocks[i]
        after = blocks[i + 1] if i + 1 < len(blocks) else None
        if (after is not None and block.exception is not None and not block.frames and after.exception is None
                and after.frames and not after.relation and after.start - block.end <= _MESSAGE_TO_FRAMES):
            out.append(Block(block.exception, after.frames, block.relation, block.rank, block.start, after.end,
                             block.intro))
            i += 2
            continue
        out.append(block)
        i += 1
    return out


def _outermost_first(block: Block) -> Block:
    """Frames pasted without a header and innermost first (VS Code's call stack, a copy of its
    exception widget without the header line): the first frame raises, the last does not.
    Returned in Python's order, outermost first."""
    frames = block.frames
    if (block.exception is None and len(frames) > 1 and (frames[0].code or "").startswith("raise ")
            and not (frames[-1].code or "").startswith("raise ")):
        return replace(block, frames=tuple(reversed(frames)))
    return block


def _ipython_frame_without_header(texts: list[str], i: int) -> bool:
    """An IPython frame (`/path/x.py in loss(self, ...)`, `Cell In[6], line 3`) whose
    `Type  Traceback (most recent call last)` header was not pasted: its `---->` line follows."""
    text = texts[i]
    if not text or text[0] == " " or " in " not in text and not text.startswith(("Cell In", "File ")):
        return False
    stripped = text.strip()
    if not any(p.match(stripped) for p in (_IPY_CELL, _IPY_FILE, _IPY_INPUT, _IPY_OLD_FILE)):
        return False
    return any(_IPY_ARROW.match(t) and "-" in t[:t.find(">")] for t in texts[i + 1:i + 12])


def _previous(texts: list[str], i: int) -> str:
    for j in range(i - 1, max(-1, i - 3), -1):
        if texts[j].strip():
            return texts[j].strip()
    return ""


def _bare_exception(text: str) -> re.Match[str] | None:
    """`RuntimeError: ...` at the start of a line, without frames (a log that
    shows only the error)."""
    if not text or text[0] == " ":
        return None
    colon = text.find(":")
    if colon <= 0 or " " in text[:colon]:
        return None  # cheap reject: most log lines are not `Type: message`
    found = _EXC.match(text)
    if found and found.group("msg") is not None and _BARE_TYPE.search(found.group("type")):
        return found
    return None


def _exception_line(text: str, strict: bool = False) -> re.Match[str] | None:
    """`Type: message` ending a traceback. `strict`: the line is at the frames' own
    indentation (a paste that lost it), so it could be a source line: demand a
    real exception type."""
    found = _EXC.match(text.strip())
    if not found:
        return None
    if found.group("msg") is None and not _STRONG_TYPE.search(found.group("type")):
        return None
    if strict and not (_STRONG_TYPE.search(found.group("type")) or "." in found.group("type")):
        return None
    return found


_PARTIAL_TYPE = re.compile(r"^(?P<type>(?:[a-z_]\w*\.)*[A-Z]\w{3,})(?::(?:\s?(?P<msg>.*)))?$")


def _truncated_exception(text: str) -> re.Match[str] | None:
    """The last line of a paste that was cut inside the exception type (`torch.OutOfMemoryErr`)."""
    return _PARTIAL_TYPE.match(text.strip())


def _is_last(texts: list[str], i: int) -> bool:
    """Line i ends the stream (only blank lines follow, looking a bounded way ahead)."""
    return not any(t.strip() for t in texts[i + 1:i + 200]) and i + 200 >= len(texts)


def _exception_after_blank(texts: list[str], i: int, frame_indent: int) -> bool:
    """A paste that put a blank line (or a closed code fence) between the frames and the exception."""
    for text in texts[i + 1:i + 3]:
        if text.strip():
            return _indent(text) <= frame_indent and _exception_line(text, strict=True) is not None
    return False


def _frame_follows(texts: list[str], i: int) -> bool:
    """A frame header comes right after line i: the line was a source line that lost its indent."""
    return i + 1 < len(texts) and _FRAME.match(texts[i + 1]) is not None


def _lost_indent(texts: list[str], i: int) -> bool:
    """The source line at i (right after a frame header) is at the header's indentation:
    true when the paste lost indentation, i.e. the next line is another frame or the exception."""
    if i + 1 >= len(texts):
        # the paste ends on it (cut before the message): source, unless it reads as an exception
        last = texts[i].strip()
        return _exception_line(last, strict=False) is None and _truncated_exception(last) is None \
            and any(ch in last for ch in "(=[.")
    follow = texts[i + 1]
    return _FRAME.match(follow) is not None or _exception_line(follow, strict=True) is not None \
        or _truncated_exception(follow) is not None and _is_last(texts, i + 1)


def _message(lines: list[Line], indices: list[int], texts: list[str], i: int,
             found: re.Match[str]) -> tuple[str, int]:
    """The exception message from line i on (messages can span lines); returns
    the message and the index after it."""
    first = texts[i]
    base_indent = _indent(first)
    parts = [found.group("msg") or ""]
    prefixed = lines[indices[i]].prefixed
    j = i + 1
    n = len(texts)
    while j < n and len(parts) < _MAX_MESSAGE_LINES:
        text = texts[j]
        stripped = text.strip()
        if (not stripped or HEADER in text or _FRAME.match(text) or _CAUSE in text or _CONTEXT in text
                or (lines[indices[j]].prefixed and not prefixed) or LOG_RECORD.search(text)):
            break
        parts.append(text[base_indent:] if _indent(text) >= base_indent else stripped)
        j += 1
    return "\n".join(parts).strip("\n"), j


def _parse_block(lines: list[Line], indices: list[int], texts: list[str], i: int, rank: int | None,
                 relation: str, intro: str) -> tuple[Block, int]:
    start = indices[min(i, len(indices) - 1)] if indices else 0
    frames: list[Frame] = []
    frame_indent: int | None = None
    exception: ExceptionInfo | None = None
    n = len(texts)
    while i < n:
        text = texts[i]
        found = _FRAME.match(text)
        if found:
            indent = len(found.group("indent"))
            frame_indent = indent if frame_indent is None else min(frame_indent, indent)
            i += 1
            code = None
            while i < n:
                follow = texts[i]
                if not follow.strip() or _FRAME.match(follow) or HEADER in follow:
                    break
                if _indent(follow) <= indent:
                    # Pasted text that lost its indentation: the line right after a frame
                    # header is its source line unless it is the exception.
                    if code is not None or _exception_line(follow, strict=True) or not _lost_indent(texts, i):
                        break
                stripped = follow.strip()
                if code is None and not _CARET.match(stripped):
                    code = stripped
                i += 1
            path = found.group("path")
            frames.append(Frame(path, int(found.group("line")), (found.group("func") or "?").strip(),
                                code, is_user_path(path)))
            continue
        stripped = text.strip()
        if not stripped:
            if frames and not _exception_after_blank(texts, i, frame_indent or 0):
                break
            i += 1  # a blank line right after the header
            continue
        if HEADER in text or _CAUSE in text or _CONTEXT in text:
            break
        indent = _indent(text)
        if frame_indent is None or indent <= frame_indent:
            exc = _exception_line(text, strict=indent == frame_indent)
            if exc is None and _is_last(texts, i) and frames:
                exc = _truncated_exception(text)  # a paste cut inside the exception's type
            if exc:
                message, i = _message(lines, indices, texts, i, exc)
                exception = ExceptionInfo(exc.group("type"), message)
                break
            if indent < (frame_indent or 0) and not _frame_follows(texts, i):
                break
        i += 1  # noise inside the frames: "[Previous line repeated ...]", "... (recursive calls) ..."
    end = indices[i - 1] + 1 if i > 0 and indices else start
    return Block(exception, tuple(frames), relation, rank, start, max(end, start), intro), i


def _parse_ipython(lines: list[Line], indices: list[int], texts: list[str], i: int, rank: int | None,
                   relation: str, intro: str) -> tuple[Block, int]:
    start = indices[min(i, len(indices) - 1)] if indices else 0
    frames: list[Frame] = []
    current: dict | None = None
    exception: ExceptionInfo | None = None
    n = len(texts)

    def close() -> None:
        if current and current.get("line"):
            frames.append(Frame(current["path"], int(current["line"]), current["func"], current.get("code"),
                                is_user_path(current["path"]) and "site-packages" not in current["path"]))

    while i < n:
        text = texts[i]
        stripped = text.strip()
        if not stripped or set(stripped) == {"-"}:
            i += 1
            continue
        for pattern in (_IPY_CELL, _IPY_FILE, _IPY_INPUT, _IPY_OLD_FILE):
            found = pattern.match(stripped)
            if found:
                close()
                groups = found.groupdict()
                # IPython prints the signature ("linear(x, w)"); keep the name
                func = (groups.get("func") or "<cell>").strip()
                current = {"path": groups["path"], "line": groups.get("line"),
                           "func": func[:func.index("(")] if func.endswith(")") and "(" in func else func}
                break
        else:
            arrow = _IPY_ARROW.match(text)
            if arrow and current is not None:
                current["line"] = current.get("line") or arrow.group("line")
                current.setdefault("code", arrow.group("code").strip())
            elif _IPY_CONTEXT.match(text):
                pass
            elif not text.startswith(" "):
                exc = _exception_line(text)
                if exc and (frames or current):
                    close()
                    current = None
                    message, i = _message(lines, indices, texts, i, exc)
                    exception = ExceptionInfo(exc.group("type"), message)
                    break
                if HEADER in text:
                    break
        i += 1
    close() if current else None
    end = indices[i - 1] + 1 if i > 0 and indices else start
    return Block(exception, tuple(frames), relation, rank, start, max(end, start), intro), i


def _link(blocks: list[Block]) -> list[Chain]:
    chains: list[list[Block]] = []
    for block in blocks:
        if block.relation and chains:
            chains[-1].append(block)
        else:
            chains.append([block])
    return [Chain(tuple(c)) for c in chains]
