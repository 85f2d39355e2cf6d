"""Where a traversal is: enclosing loops, functions, classes, no-grad regions,
the ancestor stack and a visit counter (the source order the analysis's
reaching definitions are keyed by). Maintained by the engine's walk hooks so
that neither the analysis nor the rules track it themselves."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ClassVar

import libcst as cst

from .analysis.names import Names, dotted_name  # noqa: F401  (dotted_name re-exported)
from .analysis.vocab import vocab


@dataclass
class WalkState:
    names: Names
    stack: list[cst.CSTNode] = field(default_factory=list)
    loops: list[cst.CSTNode] = field(default_factory=list)  # FunctionDef entries separate scopes
    functions: list[cst.FunctionDef] = field(default_factory=list)
    classes: list[cst.ClassDef] = field(default_factory=list)
    no_grad_depth: int = 0
    order: int = 0  # nodes entered so far
    # Whether a `with` item's call builds a project context manager that turns autograd off
    # (autograd_off.call_turns_grad_off, which reads the file model); None where no model is built yet.
    grad_off_call: Callable[[cst.Call], bool] | None = None
    _no_grad_nodes: set[int] = field(default_factory=set)

    STRUCTURAL: ClassVar[frozenset[type]] = frozenset({cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.With})

    @property
    def in_no_grad(self) -> bool:
        return self.no_grad_depth > 0

    @property
    def function(self) -> cst.FunctionDef | None:
        return self.functions[-1] if self.functions else None

    @property
    def klass(self) -> cst.ClassDef | None:
        return self.classes[-1] if self.classes else None

    @property
    def parent(self) -> cst.CSTNode | None:
        return self.stack[-2] if len(self.stack) >= 2 else None

    def qualname(self) -> str:
        """`Class.method` / `function` of the innermost function, "" at module level."""
        function = self.function
        if function is None:
            return ""
        klass = self.klass
        inside = klass is not None and self.stack.index(klass) < self.stack.index(function)
        return f"{klass.name.value}.{function.name.value}" if inside else function.name.value

    def enter(self, node: cst.CSTNode) -> None:
        """The walk entered a node of a STRUCTURAL type (it keeps `order` and `stack`)."""
        node_type = type(node)
        if node_type is cst.For or node_type is cst.While:
            self.loops.append(node)
        elif node_type is cst.FunctionDef:
            self.functions.append(node)  # type: ignore[arg-type]
            self.loops.append(node)  # a loop outside a nested function does not repeat its body
            if self.disables_grad(node):
                self._no_grad_nodes.add(id(node))
                self.no_grad_depth += 1
        elif node_type is cst.ClassDef:
            self.classes.append(node)  # type: ignore[arg-type]
        elif node_type is cst.With and self.disables_grad(node):
            self._no_grad_nodes.add(id(node))
            self.no_grad_depth += 1

    def leave(self, node: cst.CSTNode) -> None:
        """The walk left a node of a STRUCTURAL type."""
        node_type = type(node)
        if node_type is cst.For or node_type is cst.While:
            self.loops.pop()
        elif node_type is cst.FunctionDef:
            self.functions.pop()
            self.loops.pop()
        elif node_type is cst.ClassDef:
            self.classes.pop()
        if self._no_grad_nodes and id(node) in self._no_grad_nodes:
            self._no_grad_nodes.discard(id(node))
            self.no_grad_depth -= 1

    def loops_here(self) -> list[cst.CSTNode]:
        """Loops enclosing the current node inside the current function, outermost first."""
        found: list[cst.CSTNode] = []
        for loop in reversed(self.loops):
            if type(loop) is cst.FunctionDef:
                break
            found.append(loop)
        return found[::-1]

    def innermost_loop(self) -> cst.CSTNode | None:
        return self.loops[-1] if self.loops and type(self.loops[-1]) is not cst.FunctionDef else None

    def statement(self) -> cst.CSTNode | None:
        """The innermost statement that sits directly in a block body."""
        stack = self.stack
        for index in range(len(stack) - 1, 0, -1):
            node, parent = stack[index], stack[index - 1]
            if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and isinstance(
                    parent, (cst.IndentedBlock, cst.Module)):
                return node
        return None

    def disables_grad(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.With):
            exprs = [item.item for item in node.items]
        elif isinstance(node, cst.FunctionDef):
            exprs = [d.decorator for d in node.decorators]
        else:
            return False
        return any(self.is_no_grad_expr(e) for e in exprs)

    def is_no_grad_expr(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call):
            if self.grad_off_call is not None and self.grad_off_call(expr):
                return True
            target = self.names.qualify(expr.func)
            if target in ("torch.set_grad_enabled", "torch.enable_grad"):
                return target == "torch.set_grad_enabled" and bool(expr.args) and \
                    isinstance(expr.args[0].value, cst.Name) and expr.args[0].value.value == "False"
            expr = expr.func
        target = self.names.qualify(expr)
        if target is None:
            return False
        # Project helpers named after what they wrap (ultralytics' `smart_inference_mode()`) count too:
        # quiet gradient rules are the cheaper mistake.
        return target in vocab().no_grad_contexts or \
            target.rsplit(".", 1)[-1].endswith(tuple(vocab().no_grad_name_suffixes))

