"""Randomness vocabulary in use: what a call seeds, which global RNG it draws
from, and the per-block visitor part that records seeds, draws and the RNG
objects datasets use."""

from __future__ import annotations

import re

import libcst as cst


from .facts import Draw, Marker, MethodUse, Seed
from .name_draws import draws_a_name
from .names import dotted_name
from .scopes import names_in
from .vocab import vocab


def arg(call: cst.Call, name: str, position: int | None) -> cst.BaseExpression | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    if position is not None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if position < len(positional):
            return positional[position].value
    return None


def is_false(expr: cst.BaseExpression | None) -> bool:
    return isinstance(expr, cst.Name) and expr.value in ("False", "None")


def classify_seed(qualified: str, call: cst.Call) -> str | None:
    """torch | cuda | cuda_all | numpy | random | all (a library helper) |
    helper (a helper by its name) | determinism; None: not global seeding."""
    v = vocab()
    if qualified in v.seed_calls:
        return v.seed_calls[qualified]
    if qualified in v.seed_all_functions:
        return "all"
    if qualified == "torch.use_deterministic_algorithms":
        first = arg(call, "mode", 0)
        return None if first is None or is_false(first) else "determinism"
    root, last = qualified.split(".")[0], qualified.rsplit(".", 1)[-1]
    if root in v.foreign_frameworks or not v.pattern("seed_helper_pattern").match(last):
        return None
    return "all" if root in v.seed_all_libraries else "helper"


def draw_library(qualified: str, call: cst.Call) -> str | None:
    """The library whose global RNG this call draws from, if any."""
    v = vocab()
    parts = qualified.split(".")
    if len(parts) >= 3 and parts[0] == "numpy" and parts[1] == "random":
        return None if parts[2] in v.numpy_random_not_draws or len(parts) > 3 else "numpy"
    if len(parts) == 2 and parts[0] == "random" and parts[1] in v.random_draws:
        return "random"
    if parts[0] == "torch":
        if len(parts) == 2 and parts[1] in v.torch_draws:
            return "torch"
        if qualified.startswith("torch.nn.init.") and parts[-1] not in v.init_not_draws:
            return "torch"
        if qualified.startswith("torch.nn.functional.") and "dropout" in parts[-1]:
            return "torch"
        if len(parts) == 3 and parts[1] == "nn" and parts[2] in v.torch_random_layers:
            return "torch"
        if qualified in ("torch.utils.data.random_split", "torch.utils.data.RandomSampler"):
            return None if arg(call, "generator", None) is not None else "torch"
        if qualified in v.dataloaders:
            positions = v.dataloader_positions
            shuffle = arg(call, "shuffle", positions["shuffle"])
            if shuffle is not None and not is_false(shuffle) and \
                    arg(call, "generator", positions["generator"]) is None:
                return "torch"
            return None
    if is_random_transform(qualified, call):
        return "torch"
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in v.tensor_draw_methods:
        return "torch"
    return None


def is_random_transform(qualified: str, call: cst.Call) -> bool:
    v = vocab()
    parts = qualified.split(".")
    if parts[0] == "torchvision" and "transforms" in parts and parts[-1].startswith(
            tuple(v.random_transform_prefixes)):
        return True
    if parts[0] == "albumentations" and parts[-1] not in v.albumentations_not_random:
        p = arg(call, "p", None)
        if p is None:
            return parts[-1].startswith("Random")
        return not (isinstance(p, (cst.Integer, cst.Float)) and float(p.value) == 0.0)
    return False


class SeedingFacts:
    """Mixin for the block collector: records Seed, Draw, MethodUse and markers."""

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar) and node.module is not None:
            if dotted_name(node.module) in ("torch.utils.data", "torch.utils.data.dataloader"):
                self.lists["seeding"].append(Marker("star-dataloader"))  # type: ignore[attr-defined]

    def _randomness(self, node: cst.Call, qualified: str) -> None:
        walk, out = self.walk, self.lists["seeding"]  # type: ignore[attr-defined]
        kind = classify_seed(qualified, node)
        if kind is not None:
            seed = arg(node, "seed", 0)
            workers = False
            if kind == "all" and qualified.endswith("seed_everything"):
                flag = arg(node, "workers", 1)
                workers = flag is not None and not is_false(flag)
            seed_text = _EMPTY.code_for_node(seed) if seed is not None else ""
            stmt = walk.statement()
            out.append(Seed(kind, qualified, seed_text, walk.qualname(), workers, node,
                            stmt if isinstance(stmt, cst.SimpleStatementLine) else None, _loops(walk)))
            return
        if qualified.rsplit(".", 1)[-1] == "DataLoader":
            init_fn = arg(node, "worker_init_fn", vocab().dataloader_positions["worker_init_fn"])
            if isinstance(init_fn, cst.Name):
                out.append(Marker("worker-fn", init_fn.value))
        library = draw_library(qualified, node)
        klass = walk.klass.name.value if walk.klass is not None else ""
        method = walk.function.name.value if walk.function is not None else ""
        if library is not None and not (library != "torch" and self._picks_a_port()) and \
                not draws_a_name(node, qualified, walk.function, walk.stack, self.names.qualify):  # type: ignore
            out.append(Draw(library, qualified, walk.qualname(), klass, method, node, _loops(walk)))
        if not klass or not method:
            return
        func = node.func
        while isinstance(func, cst.Attribute) and isinstance(func.value, cst.Attribute):
            func = func.value
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            out.append(MethodUse(klass, method, func.attr.value, node))
        for a in node.args:  # torch.randint(..., generator=self.gen)
            if a.keyword is not None and a.keyword.value in ("generator", "rng", "random_state") \
                    and isinstance(a.value, cst.Attribute) and dotted_name(a.value.value) == "self":
                out.append(MethodUse(klass, method, a.value.attr.value, node))

    def _determinism(self, node: cst.Assign) -> None:
        """`cudnn.deterministic = True`: the program asks for deterministic kernels."""
        value = node.value
        if type(value) is cst.Name and value.value == "True" and any(
                (self.names.qualify(t.target) or "") in vocab().cudnn_deterministic  # type: ignore[attr-defined]
                for t in node.targets):
            self.lists["seeding"].append(Marker("deterministic", node=node))  # type: ignore[attr-defined]

    def _picks_a_port(self) -> bool:
        """`port = random.randint(20000, 30000)`, `os.environ["MASTER_PORT"] = str(...)`,
        `init(port=random.randint(...))`: a free port, not training randomness. Read from where the
        value goes (an assignment target or a keyword with `port` as one of its words), not from the
        statement's text: `support = random.sample(classes, k)` draws a few-shot episode."""
        for ancestor in reversed(self.walk.stack[:-1]):  # type: ignore[attr-defined]
            if type(ancestor) is cst.Arg and ancestor.keyword is not None:
                return "port" in _words(ancestor.keyword.value)
            if type(ancestor) in (cst.Assign, cst.AnnAssign, cst.AugAssign):
                targets = [t.target for t in ancestor.targets] if type(ancestor) is cst.Assign else [ancestor.target]
                return any("port" in _words(_EMPTY.code_for_node(t)) for t in targets)
            if type(ancestor) in (cst.SimpleStatementLine, cst.FunctionDef, cst.Lambda):
                break
        return False


def _words(text: str) -> set[str]:
    """The lower-case words of identifiers and keys in `text`: `os.environ["MASTER_PORT"]` -> os,
    environ, master, port; `masterPort` -> master, port."""
    return {w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", text)}


def _loops(walk) -> tuple[int, ...]:
    """The ids of the `for`/`while` loops around the walk's position, inside its function."""
    found: list[int] = []
    for node in walk.loops:  # a FunctionDef entry separates a nested function's loops from the outer ones
        found = [] if isinstance(node, cst.FunctionDef) else found + [id(node)]
    return tuple(found)


_EMPTY = cst.Module(body=[])


def is_seeding_routine(function: cst.FunctionDef, seeds: list[Seed], qualify) -> bool:
    """The function does nothing but seed: each statement is one of its `seeds`, computes a
    name that a seed call reads (`seed = args.seed + rank`), sets a cuDNN flag, imports, or is
    a docstring, `pass`, a bare `return` or an `if` made of the same. A setting placed there
    is part of the program's reproducibility setup."""
    statements = {id(s.stmt) for s in seeds if s.stmt is not None}
    read = set().union(*(names_in(s.node) for s in seeds if s.node is not None))

    def allowed(stmt: cst.CSTNode) -> bool:
        if id(stmt) in statements:
            return True
        if type(stmt) is cst.If:
            rest = stmt.orelse
            return all(allowed(s) for s in stmt.body.body) and (
                rest is None or (allowed(rest) if type(rest) is cst.If else all(allowed(s) for s in rest.body.body)))
        if type(stmt) is not cst.SimpleStatementLine:
            return False
        for small in stmt.body:
            kind = type(small)
            if kind in (cst.Pass, cst.Import, cst.ImportFrom) or \
                    (kind is cst.Return and small.value is None) or \
                    (kind is cst.Expr and type(small.value) in (cst.SimpleString, cst.ConcatenatedString)):
                continue
            if kind is cst.Assign and all(type(t.target) is cst.Name and t.target.value in read
                                          for t in small.targets):
                continue  # the seed itself
            if kind is cst.Assign and all((qualify(t.target) or "").startswith("torch.backends.cudnn.")
                                          for t in small.targets):
                continue
            return False
        return True

    return bool(statements) and all(allowed(stmt) for stmt in function.body.body)
