"""Program-level facts: what `torch.save` writes (for weights-only loading) and
which functions `torch.multiprocessing.spawn`/`start_processes` start."""

from __future__ import annotations

import libcst as cst

from .facts import Checkpoint, Marker
from .names import dotted_name
from .vocab import vocab

_EMPTY = cst.Module(body=[])


def _arg(call: cst.Call, name: str, position: int) -> cst.BaseExpression | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[position].value if position < len(positional) else None


class ProgramFacts:
    """Mixin for the block collector (collect._Collector)."""

    def _program_call(self, node: cst.Call, qualified: str) -> None:
        v, out = vocab(), self.lists["program"]  # type: ignore[attr-defined]
        walk = self.walk  # type: ignore[attr-defined]
        klass = walk.klass.name.value if walk.klass is not None else ""
        if qualified in v.checkpoint_saves:
            obj, path = _arg(node, "obj", 0), _arg(node, "f", 1)
            if obj is None or path is None:
                return
            callee = ""
            name = dotted_name(obj)
            if name is not None:
                found = self.scope().lookup(name, walk.order)  # type: ignore[attr-defined]
                if found is not None and isinstance(found.value, cst.Call):
                    callee = self.names.qualify(found.value.func) or ""  # type: ignore[attr-defined]
            out.append(Checkpoint("save", _EMPTY.code_for_node(obj), callee, _EMPTY.code_for_node(path),
                                  walk.qualname(), klass, node))
        elif qualified in v.safe_globals_calls:
            out.append(Checkpoint("safe-globals", "", "", "", walk.qualname(), klass, node))
        elif qualified in v.spawn_calls:
            target = _arg(node, "fn", 0)
            if isinstance(target, cst.Name):
                out.append(Marker("spawn-fn", target.value, node))
