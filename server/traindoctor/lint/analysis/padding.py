"""Padding facts (for TRN301): where sequences or targets are padded and with
which value, and where padding is mapped to the default ignore_index -100."""

from __future__ import annotations

import functools
from typing import Iterable

import libcst as cst

from .facts import Marker, Pad
from ..walk import child_nodes, iter_nodes
from .names import dotted_name
from .scopes import returns
from .vocab import vocab

IGNORE = "-100"
_TOKEN_PADDING = {"True", "max_length", "longest"}
_TOKENIZER_METHODS = {"encode_plus", "batch_encode_plus", "pad", "__call__", "encode", "apply_chat_template"}
_EMPTY = cst.Module(body=[])


def literal(node: cst.BaseExpression | None) -> str | None:
    """`0`, `-100`, ... as text; None for anything that is not an int literal."""
    if isinstance(node, cst.Integer):
        return str(int(node.evaluated_value))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
            and isinstance(node.expression, cst.Integer):
        return str(-int(node.expression.evaluated_value))
    return None


def kwarg(call: cst.Call, name: str, position: int | None = None) -> cst.Arg | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a
    if position is not None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if position < len(positional):
            return positional[position]
    return None


def is_ignore_name(node: cst.CSTNode) -> bool:
    name = dotted_name(node)
    return name is not None and bool(vocab().pattern("ignore_name_pattern").search(name))


def words(node: cst.CSTNode, limit: int = 60) -> Iterable[str]:
    stack, seen = [node], 0
    while stack and seen < limit:
        current = stack.pop()
        seen += 1
        if isinstance(current, cst.Name):
            yield current.value
        elif isinstance(current, cst.SimpleString) and len(current.value) < 40:
            yield current.value.strip("'\"")
        stack.extend(child_nodes(current))


def mentions_target(*nodes: cst.CSTNode | None) -> bool:
    pattern = vocab().pattern("target_name_pattern")
    return any(node is not None and any(pattern.search(w) for w in words(node)) for node in nodes)


class PaddingFacts:
    """Mixin for the block collector."""

    def _pad(self, value: str, node: cst.CSTNode, targets: bool) -> None:
        self.lists["padding"].append(Pad(value, targets, node))  # type: ignore[attr-defined]

    def _mark(self, kind: str, node: cst.CSTNode, text: str = "") -> None:
        self.lists["padding"].append(Marker(kind, text, node))  # type: ignore[attr-defined]

    def _assign_target(self) -> cst.BaseExpression | None:
        for node in reversed(self.walk.stack[:-1]):  # type: ignore[attr-defined]
            if isinstance(node, cst.Assign):
                return node.targets[0].target
            if isinstance(node, (cst.SimpleStatementLine, cst.FunctionDef)):
                return None
        return None

    def _padding_call(self, node: cst.Call, callee: str) -> None:
        v = vocab()
        last = callee.rsplit(".", 1)[-1]
        if last == "pad_sequence":
            a = kwarg(node, "padding_value", 2)
            self._pad(_EMPTY.code_for_node(a.value) if a else "0", node,
                      mentions_target(self._assign_target(), *node.args))
            return
        if callee == "torch.nn.functional.pad":
            first = kwarg(node, "input", 0)
            if first is not None and mentions_target(first.value):
                a = kwarg(node, "value", 3)
                self._pad(_EMPTY.code_for_node(a.value) if a else "0", node, True)
            return
        if last in v.label_padding_collators:
            a = kwarg(node, "label_pad_token_id")
            if a is None or literal(a.value) == IGNORE:
                self._mark("ignore-mapped", node)
                self._mark("ignore-selective", node)
        if last in ("masked_fill", "masked_fill_", "fill_", "where", "full", "full_like", "new_full"):
            if any(literal(a.value) == IGNORE or is_ignore_name(a.value) for a in node.args):
                self._mark("ignore-mapped", node)
                if last != "full":
                    self._mark("ignore-selective", node)
        if last in ("masked_fill", "masked_fill_") and len(node.args) >= 2 and literal(node.args[-1].value) is None:
            self._mark("ignore-selective", node)  # a fill value this file cannot read may be -100
        for a in node.args:
            if a.keyword is None:
                continue
            key = a.keyword.value
            if key == "padding_idx":
                self._pad(_EMPTY.code_for_node(a.value), node, False)
            elif key == "padding_value":
                self._pad(_EMPTY.code_for_node(a.value), node, mentions_target(self._assign_target(), node))
            elif key == "ignore_index":
                self._mark("ignore-index-arg", node)  # the file's own loss decides what it skips
            elif key == "label_pad_token_id" and literal(a.value) == IGNORE:
                self._mark("ignore-mapped", node)
            elif key == "padding" and (
                    (isinstance(a.value, cst.Name) and a.value.value in _TOKEN_PADDING)
                    or (isinstance(a.value, cst.SimpleString) and a.value.value.strip("'\"") in _TOKEN_PADDING)
                    or (isinstance(a.value, cst.Attribute) and a.value.attr.value in ("MAX_LENGTH", "LONGEST"))):
                func = node.func
                tokenizer = func.value if isinstance(func, cst.Attribute) and func.attr.value in _TOKENIZER_METHODS \
                    else func
                name = dotted_name(tokenizer)
                self._pad(f"{name}.pad_token_id" if name is not None else "pad_token_id", node, False)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if vocab().pattern("pad_name_pattern").match(node.attr.value):
            name = dotted_name(node)
            if name is not None:
                self._pad(name, node, False)

    def visit_Name(self, node: cst.Name) -> None:
        parent = self.walk.parent  # type: ignore[attr-defined]
        kind = type(parent)  # exact types: isinstance against libcst's ABCs is a Python call
        if kind is cst.Attribute and parent.attr is node:
            return
        if kind is cst.Arg and parent.keyword is node:
            return
        if kind in (cst.Param, cst.FunctionDef, cst.ImportAlias):
            return
        if vocab().pattern("pad_name_pattern").match(node.value):
            self._pad(node.value, node, False)

    def _pad_string(self, node: cst.SimpleString) -> None:
        if node.value.strip("'\"bru") in vocab().pad_strings:
            self._mark("pad-string", node)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if literal(node) != IGNORE:
            return
        parent = self.walk.parent  # type: ignore[attr-defined]
        if isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == "ignore_index":
            return
        self._mark("ignore-mapped", node)  # IGNORE_INDEX = -100, labels[...] = -100, padding_value=-100
        if self._selects_positions():
            self._mark("ignore-selective", node)

    def _selects_positions(self) -> bool:
        """Is the -100 being visited written at chosen positions (`labels[labels == pad] = -100`,
        `-100 if t == pad else t`, `torch.where(mask, labels, -100)`), not as a block (a prompt's
        `[-100] * n`, `labels[:n] = -100`)? Looked for up to the enclosing statement."""
        for node in reversed(self.walk.stack[:-1]):  # type: ignore[attr-defined]
            if isinstance(node, cst.IfExp) and isinstance(node.test, (cst.Comparison, cst.Name, cst.Attribute)):
                return True
            if isinstance(node, cst.Call) and isinstance(node.func, (cst.Attribute, cst.Name)) and \
                    (dotted_name(node.func) or "").rsplit(".", 1)[-1] in ("where", "masked_fill", "masked_fill_"):
                return True
            if isinstance(node, cst.Assign):
                return any(isinstance(t.target, cst.Subscript) and _chosen_positions(t.target) for t in node.targets)
            if isinstance(node, (cst.SimpleStatementLine, cst.FunctionDef)):
                return False
        return False

    def _padding_subscript(self, target: cst.Subscript, value: cst.BaseExpression, stmt: cst.CSTNode) -> None:
        base = dotted_name(target.value) or ""
        if is_ignore_name(value):
            self._mark("ignore-mapped", stmt)
        if _chosen_positions(target) and literal(value) is None and not isinstance(value, (cst.List, cst.Tuple)):
            # `labels[labels == pad] = IGNORE` / `= cfg.LABEL_PAD`: a value this file cannot read
            # (another module's constant) may well be -100, so the padding counts as handled.
            self._mark("ignore-selective", stmt)
        elif literal(value) == "0" and base:
            self._mark("index-zeroed", stmt, base)  # `weight[PAD] = 0`: a loss given it as weight ignores PAD

    def _padding_name(self, name: str, value: cst.BaseExpression) -> None:
        if vocab().pattern("pad_name_pattern").match(name.rsplit(".", 1)[-1]):
            self._mark("pad-def", value, f"{name}={_EMPTY.code_for_node(value)}")


def _chosen_positions(target: cst.Subscript) -> bool:
    """`x[mask] = ...` / `x[x == pad] = ...`: positions chosen by a value, not a slice or a constant."""
    return any(isinstance(e.slice, cst.Index) and literal(e.slice.value) is None and not isinstance(
        e.slice.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)) for e in target.slice)


def padded_targets(model) -> tuple[str, ...]:
    """The values targets are padded with in this file (TRN301, TRN305): pads of targets themselves
    (pad_sequence/F.pad of labels, padding_value=) and target pad ids (`TRG_PAD_IDX`); () when none.
    Computed once per lint."""
    pattern = vocab().pattern("target_name_pattern")
    return model.remembered("padding.targets", lambda: tuple(dict.fromkeys(
        p.value for p in model.facts["padding"] if isinstance(p, Pad) and (p.targets or pattern.search(p.value)))))


def expansions(model, scope, expr: cst.BaseExpression, at: int, depth: int = 3):
    """Every node of `expr`, then of what its names were bound to in `scope` before `at`, and of
    what an in-file function it names returns (a collate function), up to `depth` bindings deep."""
    stack, seen = [(expr, depth)], 0
    while stack and seen < 200:
        node, left = stack.pop()
        seen += 1
        for inner in iter_nodes(node):
            yield inner
            if isinstance(inner, cst.Name) and left > 0:
                definition = scope.lookup(inner.value, at)
                if definition is not None and definition.value is not None:
                    stack.append((definition.value, left - 1))
                elif definition is None and model.function(inner.value) is not None:
                    info = model.function(inner.value)
                    stack.extend((r.value, left - 1) for r in returns(info.node) if r.value is not None)


def derived_from_padding(model, scope, expr: cst.BaseExpression, at: int, depth: int = 6,
                         with_token_ids: bool = False) -> bool:
    """`expr` is computed (through this scope's definitions, and what an in-file collate function
    returns) from a padding call: `tokenizer(..., padding=True)`, `pad_sequence(...)`; with
    `with_token_ids`, only from one that pads with something other than -100."""
    key = "padding.token-id-calls" if with_token_ids else "padding.calls"
    pad_calls = model.remembered(key, lambda: frozenset(
        id(p.node) for p in model.facts["padding"] if isinstance(p, Pad) and isinstance(p.node, cst.Call)
        and not (with_token_ids and literal(parse_expression(p.value)) == IGNORE)))
    return bool(pad_calls) and any(id(node) in pad_calls for node in expansions(model, scope, expr, at, depth))


@functools.lru_cache(maxsize=1024)
def parse_expression(text: str) -> cst.BaseExpression | None:
    try:
        return cst.parse_expression(text)
    except (cst.ParserSyntaxError, RecursionError):
        return None


def int_value(model, node: cst.BaseExpression, scopes: tuple = (), at: int = 10**9, depth: int = 3) -> str | None:
    """The int a pad or ignore value stands for, as text: a literal, or a name bound to one (in
    `scopes` before `at`, as a module constant, or as a `pad_*` definition); None if unknown."""
    found = literal(node)
    name = dotted_name(node)
    if found is not None or depth == 0 or name is None:
        return found
    for scope in scopes:
        definition = scope.lookup(name, at if scope is scopes[0] else 10**9)
        if definition is not None:
            if definition.value is not None and definition.index is None:
                return int_value(model, definition.value, scopes, at, depth - 1)
            break
    if name in model.constants:
        return model.constants[name]
    bound = model.remembered("padding.defs", lambda: {m.text.split("=", 1)[0]: m.node for m in model.facts["padding"]
                                                     if getattr(m, "kind", "") == "pad-def"}).get(name)
    return int_value(model, bound, (), at, depth - 1) if bound is not None else None


def pad_values(model) -> tuple[str, ...]:
    """Distinct pad values of the file, targets' first; values that already mean "ignored"
    (-100, IGNORE_INDEX) are left out; with a target pad id, source pad ids are too."""
    return model.remembered("padding.values", lambda: _pad_values(model))


def _pad_values(model) -> tuple[str, ...]:
    v = vocab()
    pads = sorted((p for p in model.facts["padding"] if isinstance(p, Pad)), key=lambda p: not p.targets)
    ordered: list[str] = []
    for text in dict.fromkeys(p.value for p in pads):
        parsed = parse_expression(text)
        resolved = int_value(model, parsed) if parsed is not None else None
        if resolved == IGNORE or v.pattern("ignore_name_pattern").search(text):
            continue
        ordered.append(text)
    if any(v.pattern("target_name_pattern").search(t) for t in ordered):  # SRC_PAD_IDX vs TRG_PAD_IDX
        ordered = [t for t in ordered if not any(w in t.lower() for w in ("src", "source", "input", "enc_"))]
    return tuple(ordered)
