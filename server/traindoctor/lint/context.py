"""What rules know beyond the node in front of them.

- `WalkState`: where the traversal is (enclosing loops, functions, classes,
  no-grad regions, the ancestor stack), maintained by the engine's hooks so
  that rules do not each track it.
- `FileFacts`: what is true of the whole file (import aliases, and facts that
  rules' collectors recorded in any block), so that a rule checking one block
  can see an import, a seed call or a dataset class defined in another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Iterable

import libcst as cst

_NO_GRAD = {
    "torch.no_grad",
    "torch.inference_mode",
    "torch.autograd.no_grad",
    "torch.autograd.grad_mode.no_grad",
    "torch.autograd.grad_mode.inference_mode",
}


def dotted_name(node: cst.CSTNode) -> str | None:
    """`a.b.c` for Name/Attribute chains, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def _import_aliases(stmt: cst.CSTNode) -> Iterable[tuple[str, str]]:
    """(local name, qualified name) pairs bound by one import statement."""
    if isinstance(stmt, cst.Import):
        for alias in stmt.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                yield alias.asname.name.value, full
            else:
                head = full.split(".")[0]
                yield head, head
    elif isinstance(stmt, cst.ImportFrom) and not stmt.relative and stmt.module is not None:
        module = dotted_name(stmt.module)
        if module is None or isinstance(stmt.names, cst.ImportStar):
            return
        for alias in stmt.names:
            name = dotted_name(alias.name)
            if name is None:
                continue
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            yield local, f"{module}.{name}"


def top_level_aliases(module: cst.Module) -> tuple[tuple[str, str], ...]:
    """Aliases from imports at module level, including inside top-level
    `if`/`try` blocks (optional imports), and plain re-bindings such as
    `CE = nn.CrossEntropyLoss`. Cheap: no traversal below statement level."""
    found: list[tuple[str, str]] = []

    def scan(body: Iterable[cst.CSTNode]) -> None:
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, (cst.Import, cst.ImportFrom)):
                        found.extend(_import_aliases(small))
                    elif (
                        isinstance(small, cst.Assign)
                        and len(small.targets) == 1
                        and isinstance(small.targets[0].target, cst.Name)
                        and dotted_name(small.value) is not None
                    ):
                        found.append(("=" + small.targets[0].target.value, dotted_name(small.value) or ""))
            elif isinstance(stmt, cst.If):
                scan(stmt.body.body)
                if isinstance(stmt.orelse, cst.Else):
                    scan(stmt.orelse.body.body)
            elif isinstance(stmt, cst.Try):
                scan(stmt.body.body)
                for handler in stmt.handlers:
                    scan(handler.body.body)

    scan(module.body)
    return tuple(found)


@dataclass(frozen=True)
class FileFacts:
    """File-wide knowledge, merged from every block. Hashable: it is part of
    the cache key of each block's rule results."""

    aliases: tuple[tuple[str, str], ...] = ()
    records: tuple[tuple[str, Hashable], ...] = ()
    _alias_map: dict[str, str] = field(default_factory=dict, compare=False, hash=False, repr=False)
    _by_kind: dict[str, list[Hashable]] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        imports = {local: full for local, full in self.aliases if not local.startswith("=")}
        # `CE = nn.CrossEntropyLoss` after `import torch.nn as nn`
        for local, value in self.aliases:
            if local.startswith("="):
                resolved = _qualify_dotted(value, imports)
                if resolved.split(".")[0] in {"torch", "numpy", "math", "random"}:
                    imports.setdefault(local[1:], resolved)
        self._alias_map.update(imports)
        for kind, value in self.records:
            self._by_kind.setdefault(kind, []).append(value)

    def qualify(self, node: cst.CSTNode) -> str | None:
        """The dotted name an expression refers to, through import aliases:
        `F.cross_entropy` -> `torch.nn.functional.cross_entropy`. A name that
        no import binds is returned as written."""
        name = dotted_name(node)
        if name is None:
            return None
        return _qualify_dotted(name, self._alias_map)

    def imported(self, local: str) -> str | None:
        return self._alias_map.get(local)

    def get(self, kind: str) -> list[Hashable]:
        return list(self._by_kind.get(kind, ()))

    def has(self, kind: str) -> bool:
        return kind in self._by_kind


def _qualify_dotted(name: str, aliases: dict[str, str]) -> str:
    head, _, rest = name.partition(".")
    full = aliases.get(head)
    if full is None:
        return name
    return f"{full}.{rest}" if rest else full


@dataclass
class WalkState:
    """Where the traversal is. Updated by the engine before each visit_ and
    after each leave_ call, so rules see the state of the node they visit."""

    facts: FileFacts
    stack: list[cst.CSTNode] = field(default_factory=list)
    loops: list[cst.CSTNode] = field(default_factory=list)
    functions: list[cst.FunctionDef] = field(default_factory=list)
    classes: list[cst.ClassDef] = field(default_factory=list)
    no_grad_depth: int = 0
    _no_grad_nodes: set[int] = field(default_factory=set)

    @property
    def in_loop(self) -> bool:
        return bool(self.loops)

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

    # Hot path (called for every node): compare exact types, not isinstance,
    # which goes through ABC machinery for libcst classes.
    def enter(self, node: cst.CSTNode) -> None:
        self.stack.append(node)
        node_type = type(node)
        if node_type in _STRUCTURAL:
            if node_type is cst.For or node_type is cst.While:
                self.loops.append(node)
            elif node_type is cst.FunctionDef:
                self.functions.append(node)  # type: ignore[arg-type]
                # A loop outside a nested function does not repeat its body.
                self.loops.append(node)
                if self._disables_grad(node):  # type: ignore[arg-type]
                    self._no_grad_nodes.add(id(node))
                    self.no_grad_depth += 1
            elif node_type is cst.ClassDef:
                self.classes.append(node)  # type: ignore[arg-type]
            elif node_type is cst.With and self._disables_grad(node):  # type: ignore[arg-type]
                self._no_grad_nodes.add(id(node))
                self.no_grad_depth += 1

    def leave(self, node: cst.CSTNode) -> None:
        self.stack.pop()
        node_type = type(node)
        if node_type in _STRUCTURAL:
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

    def loop_depth(self) -> int:
        """Loops enclosing the current node inside the current function."""
        depth = 0
        for loop in reversed(self.loops):
            if isinstance(loop, cst.FunctionDef):
                break
            depth += 1
        return depth

    def innermost_loop(self) -> cst.CSTNode | None:
        if self.loops and not isinstance(self.loops[-1], cst.FunctionDef):
            return self.loops[-1]
        return None

    def _disables_grad(self, node: cst.With | cst.FunctionDef) -> bool:
        exprs: list[cst.BaseExpression]
        if isinstance(node, cst.With):
            exprs = [item.item for item in node.items]
        else:
            exprs = [d.decorator for d in node.decorators]
        return any(self.is_no_grad_expr(e) for e in exprs)

    def is_no_grad_expr(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call):
            target = self.facts.qualify(expr.func)
            if target in ("torch.set_grad_enabled", "torch.enable_grad"):
                return target == "torch.set_grad_enabled" and _is_false(expr)
            expr = expr.func
        target = self.facts.qualify(expr)
        if target is None:
            return False
        return target in _NO_GRAD or target.endswith((".no_grad", ".inference_mode")) or target in (
            "no_grad",
            "inference_mode",
        )


_STRUCTURAL = frozenset({cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.With})


def _is_false(call: cst.Call) -> bool:
    return bool(call.args) and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "False"
