"""The shared vocabulary: values that cross module boundaries.

Every class here is a frozen dataclass so that lint results, diagnoses and
probes can be cached, compared and sent between processes safely. Positions are
0-based lines and 0-based columns counted in Unicode code points; the fronts
(CLI, LSP) convert to their own conventions.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any

# Failure modes from the ML debugging playbooks (see docs/ARCHITECTURE.md).
FAILURE_MODES = (
    "nan-gradient",
    "oom",
    "slow-training",
    "slow-data",
    "metric-error",
    "repro-failure",
    "crash",
    "silent-error",
)


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    HINT = "hint"


@dataclass(frozen=True, order=True)
class Position:
    line: int
    column: int


@dataclass(frozen=True, order=True)
class Range:
    start: Position
    end: Position

    @classmethod
    def of(cls, start_line: int, start_col: int, end_line: int, end_col: int) -> "Range":
        return cls(Position(start_line, start_col), Position(end_line, end_col))

    def shifted(self, lines: int) -> "Range":
        return Range(
            Position(self.start.line + lines, self.start.column),
            Position(self.end.line + lines, self.end.column),
        )

    def contains_line(self, line: int) -> bool:
        return self.start.line <= line <= self.end.line


@dataclass(frozen=True)
class TextEdit:
    range: Range
    new_text: str

    def shifted(self, lines: int) -> "TextEdit":
        return TextEdit(self.range.shifted(lines), self.new_text)


@dataclass(frozen=True)
class Fix:
    title: str
    edits: tuple[TextEdit, ...]
    # Safe fixes keep behaviour apart from the bug they remove; they are the ones
    # applied by `check --fix` and `source.fixAll`.
    safe: bool = True

    def shifted(self, lines: int) -> "Fix":
        return Fix(self.title, tuple(e.shifted(lines) for e in self.edits), self.safe)


@dataclass(frozen=True)
class RelatedLocation:
    message: str
    range: Range
    path: str | None = None  # None: the same file as the finding

    def shifted(self, lines: int) -> "RelatedLocation":
        return RelatedLocation(self.message, self.range.shifted(lines), self.path)


@dataclass(frozen=True)
class Finding:
    code: str  # e.g. "TRN101"
    name: str  # e.g. "loss-accumulation-keeps-graph"
    mode: str  # one of FAILURE_MODES
    severity: Severity
    message: str
    path: str
    range: Range
    fix: Fix | None = None
    related: tuple[RelatedLocation, ...] = ()
    # In a notebook: the 1-based cell number; `range` and the fix's edits are then
    # within that cell (see lint/notebook.py).
    cell: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The CLI's JSON shape: exactly these keys, 1-based positions (plus `cell`
        for a finding in a notebook, and `related` for one with related locations)."""
        return {
            "code": self.code,
            "name": self.name,
            "mode": self.mode,
            "severity": self.severity.value,
            "message": self.message,
            "path": self.path,
            **({"cell": self.cell} if self.cell is not None else {}),
            "line": self.range.start.line + 1,
            "column": self.range.start.column + 1,
            "end_line": self.range.end.line + 1,
            "end_column": self.range.end.column + 1,
            "fix": None
            if self.fix is None
            else {
                "title": self.fix.title,
                "edits": [
                    {
                        "line": e.range.start.line + 1,
                        "column": e.range.start.column + 1,
                        "end_line": e.range.end.line + 1,
                        "end_column": e.range.end.column + 1,
                        "new_text": e.new_text,
                    }
                    for e in self.fix.edits
                ],
            },
            **({"related": [{
                "message": r.message,
                **({"path": r.path} if r.path is not None else {}),
                "line": r.range.start.line + 1,
                "column": r.range.start.column + 1,
                "end_line": r.range.end.line + 1,
                "end_column": r.range.end.column + 1,
            } for r in self.related]} if self.related else {}),
        }


# --- Tracebacks and diagnoses -------------------------------------------------


@dataclass(frozen=True)
class Frame:
    path: str
    line: int  # 1-based, as printed
    function: str
    code: str | None = None  # the source line shown under the frame, if any
    is_user: bool = False  # the user's own code: not site-packages, stdlib or torch

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ExceptionInfo:
    type: str  # as printed, e.g. "torch.OutOfMemoryError" or "RuntimeError"
    message: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Traceback:
    """One parsed traceback (the last of a chain is `exception`)."""

    exception: ExceptionInfo | None
    frames: tuple[Frame, ...]
    chain: tuple[ExceptionInfo, ...] = ()  # earlier exceptions in the chain
    rank: int | None = None  # distributed rank, when the log says
    raw: str = ""


@dataclass(frozen=True)
class TensorSummary:
    name: str
    shape: tuple[int, ...]
    dtype: str
    device: str
    requires_grad: bool = False
    grad_fn: str | None = None
    nan_count: int | None = None
    inf_count: int | None = None
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    version: int | None = None  # autograd's in-place counter (`t._version`)
    scope: str | None = None  # "frame", "module" or "self": where the name was found


@dataclass(frozen=True)
class ProbeResult:
    """One probe expression's outcome in the user's stopped process."""

    name: str  # which probe, e.g. "tensors", "modules", "env", "cuda_memory"
    ok: bool
    value: Any = None  # parsed JSON on success
    error: str | None = None  # why it failed or timed out


@dataclass(frozen=True)
class Probes:
    """What was read live from a stopped process."""

    results: tuple[ProbeResult, ...] = ()
    tensors: tuple[TensorSummary, ...] = ()
    frame: Frame | None = None  # the frame the probes ran in
    rank: int | None = None
    worker: int | None = None

    def get(self, name: str) -> ProbeResult | None:
        return next((r for r in self.results if r.name == name), None)


@dataclass(frozen=True)
class FixSuggestion:
    title: str
    detail: str = ""  # the setting, the code or the command
    # The line the fix edits, when it edits code: {path, line}, the shape of Diagnosis.cause_location.
    location: dict[str, Any] | None = field(default=None, hash=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        """{title, detail}, and `location` when the fix edits a line."""
        out: dict[str, Any] = {"title": self.title, "detail": self.detail}
        if self.location is not None:
            out["location"] = dict(self.location)
        return out


@dataclass(frozen=True)
class Hypothesis:
    """One explanation of a failure; a Diagnosis ranks several, best first."""

    kind: str
    cause: str
    confidence: float  # calibrated: the share of such hypotheses that were right on the labelled set
    evidence: tuple[str, ...] = ()
    fixes: tuple[FixSuggestion, ...] = ()
    check: str = ""  # the one thing to look at or run that decides this hypothesis

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "cause": self.cause, "confidence": self.confidence,
                "evidence": list(self.evidence), "fixes": [f.to_json() for f in self.fixes],
                "check": self.check}


@dataclass(frozen=True)
class Diagnosis:
    kind: str  # cuda-oom, host-oom, nan-inf, ... , other
    mode: str  # one of FAILURE_MODES
    title: str
    root_cause: str
    evidence: tuple[str, ...]
    fixes: tuple[FixSuggestion, ...]
    confidence: float
    location: Frame | None
    frames: tuple[Frame, ...]
    exception: ExceptionInfo | None
    related_findings: tuple[Finding, ...] = ()
    rank: int | None = None
    details: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    # Ranked explanations; the first is the one the fields above describe.
    hypotheses: tuple[Hypothesis, ...] = ()
    # Where the mechanism is stated: [{title, url, states, for}] (rules/references/), "for" is
    # "kind" or a fix's title; URLs for the run's torch version when the log shows it.
    references: tuple[dict[str, Any], ...] = field(default=(), hash=False, compare=False)
    # The line that causes the failure when it is not the failing frame (the in-place op, the
    # forward op anomaly mode names, the lint finding's line): {path, line, code, why}.
    cause_location: dict[str, Any] | None = field(default=None, hash=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        """The shape the CLI, the LSP and the extension exchange (see traindoctor.diagnose)."""
        return {
            "kind": self.kind,
            "mode": self.mode,
            "title": self.title,
            "root_cause": self.root_cause,
            "evidence": list(self.evidence),
            "fixes": [f.to_json() for f in self.fixes],
            "confidence": self.confidence,
            "location": None if self.location is None else self.location.to_json(),
            "frames": [f.to_json() for f in self.frames],
            "exception": None if self.exception is None else self.exception.to_json(),
            "related_findings": [f.to_json() for f in self.related_findings],
            "rank": self.rank,
            "details": _jsonable(self.details),
            "hypotheses": [h.to_json() for h in self.hypotheses],
            "references": [dict(r) for r in self.references],
            "cause_location": None if self.cause_location is None else dict(self.cause_location),
        }


def _jsonable(value: Any) -> Any:
    """Details are free-form: keep what JSON can carry, stringify the rest."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
