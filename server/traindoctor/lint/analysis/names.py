"""Names: import aliases and qualified names (`F.softmax` -> `torch.nn.functional.softmax`)."""

from __future__ import annotations

from typing import Iterable

import libcst as cst

from .vocab import vocab

_REBINDABLE_ROOTS = {"torch", "numpy", "math", "random"}


def dotted_name(node: cst.CSTNode) -> str | None:
    """`a.b.c` for Name/Attribute chains, else None."""
    parts: list[str] = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
    if type(node) is cst.Name:
        parts.append(node.value)  # type: ignore[attr-defined]
        return ".".join(reversed(parts))
    return None


def item_key(node: cst.Subscript) -> str | None:
    """`outputs[hm]` for `outputs['hm']` (a dotted name indexed by one string constant): a dict
    item a function stores and reads back, bound and looked up like a name."""
    base = dotted_name(node.value)
    if base is None or len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
        return None
    key = node.slice[0].slice.value  # type: ignore[attr-defined]
    if type(key) is not cst.SimpleString:
        return None
    return f"{base}[{key.value.strip(chr(39) + chr(34))}]"  # type: ignore[attr-defined]


def import_aliases(stmt: cst.CSTNode) -> Iterable[tuple[str, str]]:
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
    """Aliases from module-level imports (also inside top-level `if`/`try`), and
    plain re-bindings such as `CE = nn.CrossEntropyLoss` (recorded as `=CE`)."""
    found: list[tuple[str, str]] = []
    _scan_aliases(module.body, found)
    return tuple(found)


def _scan_aliases(body: Iterable[cst.CSTNode], found: list[tuple[str, str]]) -> None:
    # A module-level function, not a closure: a closure that calls itself is a reference
    # cycle, kept (with its list) until the cycle collector runs, which a lint pauses.
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    found.extend(import_aliases(small))
                elif (isinstance(small, cst.Assign) and len(small.targets) == 1
                      and isinstance(small.targets[0].target, cst.Name)
                      and dotted_name(small.value) is not None):
                    found.append(("=" + small.targets[0].target.value, dotted_name(small.value) or ""))
        elif isinstance(stmt, cst.If):
            _scan_aliases(stmt.body.body, found)
            if isinstance(stmt.orelse, cst.Else):
                _scan_aliases(stmt.orelse.body.body, found)
        elif isinstance(stmt, cst.Try):
            _scan_aliases(stmt.body.body, found)
            for handler in stmt.handlers:
                _scan_aliases(handler.body.body, found)


def literal_number(node: cst.BaseExpression | None) -> float | None:
    """The value of a number literal (`2`, `0.5`, `-1`, `1e-8`), else None."""
    kind = type(node)  # exact types: isinstance against libcst's ABCs is a Python call
    if kind is cst.Integer or kind is cst.Float:
        try:
            return float(node.evaluated_value)  # type: ignore[union-attr]
        except (ValueError, OverflowError):
            return None
    if kind is cst.UnaryOperation and type(node.operator) is cst.Minus:  # type: ignore[union-attr]
        value = literal_number(node.expression)  # type: ignore[union-attr]
        return -value if value is not None else None
    return None


class Names:
    """The file's import aliases; `qualify` resolves an expression through them."""

    def __init__(self, aliases: tuple[tuple[str, str], ...]) -> None:
        self.aliases = aliases
        imports = {local: full for local, full in aliases if not local.startswith("=")}
        for local, value in aliases:
            if local.startswith("="):
                resolved = _qualify_dotted(value, imports)
                if resolved.split(".")[0] in _REBINDABLE_ROOTS:
                    imports.setdefault(local[1:], resolved)
        self.imports = imports
        self._bound = {local for local, _ in aliases if not local.startswith("=")}
        # id(node) -> (node, its qualified name): the analysis and a dozen rules ask about the
        # same callee; the node is kept so that its id cannot be reused by another one.
        self._qualified: dict[int, tuple[cst.CSTNode, str | None]] = {}

    def qualify(self, node: cst.CSTNode) -> str | None:
        entry = self._qualified.get(id(node))
        if entry is not None and entry[0] is node:
            return entry[1]
        name = dotted_name(node)
        found = None if name is None else _qualify_dotted(name, self.imports)
        self._qualified[id(node)] = (node, found)
        return found

    def imported(self, local: str) -> str | None:
        return self.imports.get(local)

    def framework_of_another_kind(self) -> bool:
        """The file imports another deep-learning framework (TensorFlow, JAX, Paddle...) and nothing of
        PyTorch's: its tensors are that framework's, so no claim about torch's autograd, kernels or
        loaders holds there, and a torch fix would break it (GraphSAINT's `tensorflow_version/`)."""
        v = vocab()
        roots = {full.split(".")[0] for local, full in self.aliases if not local.startswith("=")}
        return bool(roots & set(v.foreign_frameworks)) and not roots & set(v.torch_ecosystem_roots)

    def alias_of(self, module: str) -> str | None:
        """The local name bound to `module` by a plain import (`np` for numpy)."""
        for local, full in self.aliases:
            if full == module and not local.startswith("="):
                return local
        return None


# Methods that return the object they are called on, moved or cast (`Net().cuda()`, `GradScaler().to(device)`).
_OBJECT_MOVES = ("to", "cuda", "half", "float", "bfloat16")


def constructor_func(func: cst.BaseExpression) -> cst.BaseExpression:
    """The callee of the constructor under a chain of moves: `Net` of `Net().cuda()` (given `Net().cuda`, the
    func of the whole call), `nn.Linear` of `nn.Linear(4, 2).to(device)`; `func` itself when there is none."""
    while isinstance(func, cst.Attribute) and func.attr.value in _OBJECT_MOVES and isinstance(func.value, cst.Call):
        func = func.value.func
    return func


def without_moves(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`x` of `x.to(device)`, `x.cuda()`, `x.bool()`: the same values, another dtype or device."""
    methods = vocab().dtype_device_methods
    while type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in methods:
        expr = expr.func.value
    return expr


def _qualify_dotted(name: str, aliases: dict[str, str]) -> str:
    head, _, rest = name.partition(".")
    full = aliases.get(head)
    if full is None:
        return name
    return f"{full}.{rest}" if rest else full


def arg(call: cst.Call, index: int, keyword: str | None = None) -> cst.BaseExpression | None:
    """The value of a call's argument, by keyword, else by position among the positional ones."""
    if keyword is not None:
        for a in call.args:
            if a.keyword is not None and a.keyword.value == keyword:
                return a.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[index].value if index < len(positional) else None


def clamp_parts(call: cst.Call, names: Names) -> tuple[cst.BaseExpression | None, cst.BaseExpression | None,
                                                      cst.BaseExpression | None] | None:
    """(the clamped value, min, max) of `torch.clamp(x, lo, hi)` / `torch.clip(...)` or of a clamp method
    (`x.clamp(lo, hi)`, vocab `clamp_methods`) on a value, not a module; None when `call` is no clamp."""
    qualified = names.qualify(call.func) or ""
    if qualified in ("torch.clamp", "torch.clip"):
        return arg(call, 0, "input"), arg(call, 1, "min"), arg(call, 2, "max")
    if type(call.func) is cst.Attribute and call.func.attr.value in vocab().clamp_methods and \
            not qualified.startswith(("torch.", "numpy.")):
        return call.func.value, arg(call, 0, "min"), arg(call, 1, "max")
    return None
