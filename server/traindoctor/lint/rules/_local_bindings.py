"""What a local name was last bound to, in source order, per function.

Shared by rules that reason about a value through simple assignments
(`probs = F.softmax(x, -1)` ... `torch.log(probs)`). Rules mix `Bindings` in
and call `lookup(name)`; the engine's single traversal drives the updates.
No extra traversal: bindings are recorded when an assignment is left, so the
value seen by a use is the one bound before it.
"""

from __future__ import annotations

from typing import Union

import libcst as cst

from ..context import dotted_name

# A name bound by something we do not follow (a parameter, a loop target, a
# tuple unpacking): known to be local, value unknown.
PARAMETER = "parameter"
UNKNOWN = "unknown"

Bound = Union[cst.BaseExpression, str]


class Bindings(cst.BatchableCSTVisitor):
    """Mixin for rules: per-scope `name -> last bound expression`."""

    def _frames(self) -> list[dict[str, Bound]]:
        frames = self.__dict__.get("_binding_frames")
        if frames is None:
            frames = [{}]
            self.__dict__["_binding_frames"] = frames
        return frames

    def lookup(self, name: str) -> Bound | None:
        """The expression `name` (a dotted name) was last bound to, PARAMETER
        or UNKNOWN for local names we do not follow, None if not bound here."""
        for frame in reversed(self._frames()):
            if name in frame:
                return frame[name]
        return self._module_level().get(name)

    # Module-level names bound in other top-level blocks (each block is
    # traversed by a fresh rule instance), from the rule's collector.
    GLOBALS_KIND: str = ""

    def _module_level(self) -> dict[str, Bound]:
        cached = self.__dict__.get("_binding_globals")
        if cached is None:
            cached = {}
            if self.GLOBALS_KIND:
                for name, value in self.facts.get(self.GLOBALS_KIND):  # type: ignore[attr-defined,misc]
                    cached[name] = value
            self.__dict__["_binding_globals"] = cached
        return cached

    def resolve(self, expr: cst.BaseExpression, depth: int = 4) -> cst.BaseExpression:
        """Follow `name` -> bound expression while the binding is known."""
        while depth > 0 and isinstance(expr, (cst.Name, cst.Attribute)):
            name = dotted_name(expr)
            bound = self.lookup(name) if name else None
            if not isinstance(bound, cst.BaseExpression):
                break
            expr = bound
            depth -= 1
        return expr

    # -- updates ------------------------------------------------------------------

    def tracks_bindings(self) -> bool:
        """Rules that have nothing to check in this file return False: no bookkeeping."""
        return True

    def _bind_target(self, target: cst.BaseExpression, value: Bound) -> None:
        frame = self._frames()[-1]
        if isinstance(target, (cst.Tuple, cst.List)):
            for element, part in zip(target.elements, _parts(target, value)):
                self._bind_target(element.value, part)
            return
        if isinstance(target, cst.StarredElement):
            self._bind_target(target.value, UNKNOWN)
            return
        name = dotted_name(target)
        if name is not None:
            frame[name] = value

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        frame: dict[str, Bound] = {}
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            frame[param.name.value] = PARAMETER
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                frame[star.name.value] = PARAMETER
        self._frames().append(frame)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        frames = self._frames()
        if len(frames) > 1:
            frames.pop()

    def leave_Assign(self, original_node: cst.Assign) -> None:
        if not self.tracks_bindings():
            return
        for target in original_node.targets:
            self._bind_target(target.target, original_node.value)

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        if not self.tracks_bindings():
            return
        if original_node.value is not None:
            self._bind_target(original_node.target, original_node.value)

    def leave_AugAssign(self, original_node: cst.AugAssign) -> None:
        if not self.tracks_bindings():
            return
        self._bind_target(original_node.target, UNKNOWN)

    def visit_For(self, node: cst.For) -> None:
        if not self.tracks_bindings():
            return
        self._bind_target(node.target, UNKNOWN)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if not self.tracks_bindings():
            return
        if node.asname is not None:
            self._bind_target(node.asname.name, UNKNOWN)


def record_module_binding(collector, node: cst.Assign, kind: str) -> None:
    """For a rule's collector: record `name = value` at module level (outside
    functions and classes) under `kind`, for `Bindings.GLOBALS_KIND`."""
    if collector.walk.function is not None or collector.walk.klass is not None:
        return
    for target in node.targets:
        name = dotted_name(target.target)
        if name is not None:
            collector.add(kind, (name, node.value))
        elif isinstance(target.target, (cst.Tuple, cst.List)):
            for element, part in zip(target.target.elements, _parts(target.target, node.value)):
                inner = dotted_name(element.value)
                if inner is not None:
                    collector.add(kind, (inner, part))


def _parts(target: cst.Tuple | cst.List, value: Bound) -> list[Bound]:
    """`a, b = 1, x` binds a to 1 and b to x; other unpackings are unknown."""
    if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(target.elements) \
            and not any(isinstance(e, cst.StarredElement) for e in (*value.elements, *target.elements)):
        return [e.value for e in value.elements]
    return [UNKNOWN] * len(target.elements)
