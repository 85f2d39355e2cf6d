"""The registry of kind hooks: a kind is one YAML file under rules/signatures/ plus, only
where needed, one module here named after it (`cuda-oom` -> `cuda_oom.py`) with any of the hooks:

- `derive(facts, exception_text) -> dict`: facts computed from the extracted ones (sizes in
  bytes, which side of a device mismatch is on the CPU, a checkpoint key mapping).
- `refine(failure: Failure) -> None`: what needs more than one exception's text or the user's
  source (a worker's inner error, the forward line anomaly mode names, the ranks that timed
  out, the in-place line); it may add facts, details and evidence, move `failure.location` or
  clear `failure.rank`.
- `enrich_live(live: Live) -> None`: what the probes of a stopped process show for this kind
  (the tensors of a shape mismatch, the memory arithmetic of an OOM); adds evidence, root-cause
  notes and details. `live.describe_frame()` lists the failing frame's values.
- `recognise_live(probes) -> str | None`: the id of one of this kind's signatures when the
  probes show this kind although no signature recognised the text (NaN tensors after a bare
  `assert`).

Modules are found by name: adding a kind never edits a table, the engine or the live pass.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ...model import ExceptionInfo, Frame, Probes, TensorSummary
from ..extract import human_size as _human_size
from ..probe_values import MAX_LISTED, describe, dict_items

if TYPE_CHECKING:
    from ..normalize import Line
    from ..parse import Block, Chain
    from ..select import Selection
    from ..signatures import Signature

FALLBACK = "other"  # the kind of a failure no signature recognises (rules/signatures/other.yaml)
FORWARD_TRACE = "Traceback of forward call"  # anomaly mode's second traceback: where the op ran forward


@functools.cache
def hooks(kind: str) -> ModuleType | None:
    """The hooks module of `kind`, or None when the kind needs none."""
    name = kind.replace("-", "_")
    if not name.replace("_", "").isalnum():
        return None
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{name}":
            return None
        raise


def hook(kind: str, name: str) -> Any:
    """The hook `name` of `kind`, or None."""
    return getattr(hooks(kind), name, None)


def recognised_live(probes: Probes) -> str | None:
    """The signature id a kind claims from the probes alone, for a failure the text left unrecognised."""
    from ..signatures import kinds

    for kind in kinds():
        recognise = hook(kind, "recognise_live")
        found = recognise(probes) if recognise is not None else None
        if found:
            return found
    return None


def one_line(exc: ExceptionInfo) -> str:
    """`Type: message` on one line, at most 300 characters of message."""
    message = " ".join(exc.message.split())
    if len(message) > 300:
        message = message[:297] + "..."
    return f"{exc.type}: {message}" if message else exc.type


@dataclass
class Failure:
    """What a kind's `refine` hook reads and changes while the engine builds a Diagnosis."""

    signature: Signature
    facts: dict[str, Any]
    details: dict[str, Any]
    evidence: list[str]
    chain: Chain | None
    block: Block | None
    chains: list[Chain]
    lines: list[Line]
    selection: Selection
    base_dir: Path
    location: Frame | None
    rank: int | None

    @property
    def frames(self) -> tuple[Frame, ...]:
        return self.chain.frames if self.chain is not None else ()

    @property
    def forward_chains(self) -> list[Chain]:
        """Anomaly mode's "Traceback of forward call" tracebacks (a log, or `run --anomaly`)."""
        return [chain for chain in self.chains if FORWARD_TRACE in chain.blocks[0].intro]


@dataclass
class Live:
    """What a kind's `enrich_live` hook reads (the probes, the exception message) and adds to."""

    kind: str
    message: str
    probes: Probes
    evidence: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # root-cause sentences, shown after "Live:"
    details: dict[str, Any] = field(default_factory=dict)
    frame_described: bool = False

    def describe_frame(self) -> None:
        """The failing frame's simple values and tensors (e.g. the sample index in a worker), once."""
        if self.frame_described:
            return
        self.frame_described = True
        result = self.probes.get("scalars")
        values = [v for v in (result.value if result and result.ok and isinstance(result.value, list) else [])
                  if isinstance(v, dict)]
        if values:
            shown = ", ".join(f"{v.get('name')} = {v.get('value')!r}" for v in values[:8])
            self.evidence.append(f"Values in the failing frame: {shown}.")
        tensors = [t for t in self.probes.tensors if t.scope != "module"]
        if tensors:
            self.evidence.append("Tensors in the failing frame: " + ", ".join(describe(t) for t in tensors[:4]) + ".")


def derive(kind: str, facts: dict[str, Any], text: str) -> dict[str, Any]:
    """Derived facts: the values a signature's regexes pull out, turned into the numbers and
    flags its templates need (sizes in bytes, fragmentation, key lists), by `kind`'s `derive`
    hook; never raises on odd values (a fact that cannot be computed is simply absent)."""
    handler = getattr(hooks(kind), "derive", None)
    if handler is None:
        return {}
    try:
        return handler(facts, text)
    except (ValueError, TypeError, ZeroDivisionError, KeyError):
        return {}  # odd values: keep what the regexes gave


# --- helpers for the kinds' enrich_live hooks: what a Live adds from the probes ----------


def split_by(live: Live, attribute: str) -> None:
    """Evidence and a note when the frame's tensors differ in `attribute` (device, dtype)."""
    groups: dict[str, list[TensorSummary]] = {}
    for t in live.probes.tensors:
        groups.setdefault(getattr(t, attribute), []).append(t)
    for value, members in groups.items():
        names = ", ".join(f"`{t.name}`" for t in members[:MAX_LISTED])
        live.evidence.append(f"On {attribute} {value}: {names}.")
    if len(groups) < 2:
        return
    parts = [f"{', '.join(f'`{t.name}`' for t in members[:3])} on {value}" for value, members in groups.items()]
    live.notes.append(f"the frame mixes {attribute}s: " + "; ".join(parts) + ".")


def model_memory(live: Live) -> tuple[dict[str, Any], bool]:
    """Parameters + gradients + buffers + optimizer state, from the modules and optimizers probes,
    and whether any module or optimizer was read."""
    modules = [m for m in dict_items(live.probes, "modules") if not m.get("contained_in") and "error" not in m]
    optimizers = [o for o in dict_items(live.probes, "optimizers") if "error" not in o and not o.get("scaler")]
    memory: dict[str, Any] = {
        "parameters": sum(int(m.get("param_bytes", 0)) for m in modules),
        "gradients": sum(int(m.get("grad_bytes", 0)) for m in modules),
        "buffers": sum(int(m.get("buffer_bytes", 0)) for m in modules),
        "optimizer_state": sum(int(o.get("state_bytes", 0)) for o in optimizers),
    }
    memory["model_total"] = sum(memory.values())
    if modules or optimizers:
        live.evidence.append(
            "Model memory: parameters {} + gradients {} + buffers {} + optimizer state {} = {}.".format(
                _human_size(memory["parameters"]), _human_size(memory["gradients"]), _human_size(memory["buffers"]),
                _human_size(memory["optimizer_state"]), _human_size(memory["model_total"]),
            )
        )
    return memory, bool(modules or optimizers)
