"""TRN301 padding-in-loss.

A token-level cross entropy / NLL loss over targets that are padded, with no
`ignore_index` (or one that is not the padding value) and no mask: padding
positions count as real targets, the loss is diluted and the model learns to
predict padding.

Evidence is file-wide (a collector): where padding happens and with which
value (`pad_sequence` and its `padding_value`, tokenizer `padding=...`,
`pad_token_id`/`pad_idx` names, `"[PAD]"` strings, `F.pad` of labels), whether
padding is mapped to -100 somewhere (`labels[labels == pad] = -100`,
`masked_fill(..., -100)`, HF collators with `label_pad_token_id`), and which
names hold loss objects (`self.criterion = nn.CrossEntropyLoss()`). At a loss
call the rule checks that the loss is token-level (flattened logits/targets,
transposed logits, shifted LM targets, or targets padded themselves), then
that no mask applies (masked selection of the arguments, or
`reduction='none'` followed by a mask) before it reports — at the constructor
when the loss is an object, since that is where `ignore_index=` goes.
"""

from __future__ import annotations

import functools
import re
from typing import Hashable, Iterable

import libcst as cst

from ..context import dotted_name
from ..rule import FactCollector, FixSpec, Invalid, Related, Replace, Rule
from ._local_bindings import PARAMETER, Bindings, record_module_binding

_FUNCTIONAL = {"torch.nn.functional.cross_entropy", "torch.nn.functional.nll_loss"}
_CLASSES = {"torch.nn.CrossEntropyLoss", "torch.nn.NLLLoss", "torch.nn.modules.loss.CrossEntropyLoss",
            "torch.nn.modules.loss.NLLLoss"}
_LABEL_PADDING_COLLATORS = ("DataCollatorForSeq2Seq", "DataCollatorForTokenClassification",
                            "DataCollatorForLanguageModeling", "DataCollatorWithFlattening",
                            "DataCollatorForCompletionOnlyLM")
_PAD_NAME = re.compile(
    r"^(?:\w+_)?pad(?:ding)?_?(?:idx|id|index|ix|token_?id|token_?idx|token_?index|value|val|tok_?id)$|^PAD$",
    re.IGNORECASE)
_PAD_STRINGS = {"[PAD]", "<pad>", "<PAD>", "[pad]", "<Pad>", "<|pad|>", "<|padding|>"}
_TARGET_WORDS = re.compile(r"label|target|tgt|trg|^ys?$|answer|gold|^tags?$|tag_ids|_tags$", re.IGNORECASE)
_MASK_WORDS = re.compile(r"mask|active|valid|keep|non_?pad|not_?pad|nonpad", re.IGNORECASE)
_TOKEN_PADDING = {"True", "max_length", "longest"}
_DEFAULT_IGNORE = "-100"
_SOURCE_WORDS = re.compile(r"src|source|input|enc(oder)?_", re.IGNORECASE)
_CLASS_COUNT = re.compile(r"label|class|categor", re.IGNORECASE)


@functools.lru_cache(maxsize=1024)
def _parse_expression(text: str) -> cst.BaseExpression | None:
    """Pad values are recorded as text; the same few are resolved many times."""
    try:
        return cst.parse_expression(text)
    except cst.ParserSyntaxError:
        return None


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _literal(node: cst.BaseExpression | None) -> str | None:
    """`0`, `-100`, ... as text; None for anything that is not an int literal."""
    if isinstance(node, cst.Integer):
        return str(int(node.evaluated_value))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
            and isinstance(node.expression, cst.Integer):
        return str(-int(node.expression.evaluated_value))
    return None


def _kwarg(call: cst.Call, name: str, position: int | None = None) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    if position is not None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if position < len(positional):
            return positional[position]
    return None


def _words(node: cst.CSTNode, limit: int = 60) -> Iterable[str]:
    """Names, attribute names and short strings inside `node` (bounded walk)."""
    stack = [node]
    seen = 0
    while stack and seen < limit:
        current = stack.pop()
        seen += 1
        if isinstance(current, cst.Name):
            yield current.value
        elif isinstance(current, cst.SimpleString) and len(current.value) < 40:
            yield current.value.strip("'\"")
        stack.extend(current.children)


def _mentions_target(*nodes: cst.CSTNode | None) -> bool:
    return any(node is not None and any(_TARGET_WORDS.search(w) for w in _words(node)) for node in nodes)


class _PaddingFacts(FactCollector):
    """Records (all values hashable):
    - trn301.pad: (value text, node, targets_padded) — a padding site and its value;
    - trn301.pad_def: (name, value node) — `PAD_IDX = 0`, `pad_id = tok.pad_token_id`;
    - trn301.replaced: node — padding of labels mapped to -100 somewhere;
    - trn301.weight_zero: node — `weight[pad] = 0`;
    - trn301.ctor: (class name or "", target name, ctor call) — loss objects;
    - trn301.global: module-level bindings."""

    def _assign_target(self) -> cst.BaseExpression | None:
        for node in reversed(self.walk.stack[:-1]):
            if isinstance(node, cst.Assign):
                return node.targets[0].target
            if isinstance(node, (cst.SimpleStatementLine, cst.FunctionDef)):
                return None
        return None

    def visit_Call(self, node: cst.Call) -> None:
        callee = self.facts.qualify(node.func) or ""
        last = callee.rsplit(".", 1)[-1]
        if last == "pad_sequence":
            arg = _kwarg(node, "padding_value", 2)
            value = _code(arg.value) if arg is not None else "0"
            self.add("trn301.pad", (value, node, _mentions_target(self._assign_target(), *node.args)))
            return
        if callee == "torch.nn.functional.pad":
            first = _kwarg(node, "input", 0)
            if first is not None and _mentions_target(first.value):
                arg = _kwarg(node, "value", 3)
                self.add("trn301.pad", (_code(arg.value) if arg is not None else "0", node, True))
            return
        if last in _LABEL_PADDING_COLLATORS:
            arg = _kwarg(node, "label_pad_token_id")
            if arg is None or _literal(arg.value) == _DEFAULT_IGNORE:
                self.add("trn301.replaced", node)
        if last in ("masked_fill", "masked_fill_", "fill_", "where", "full", "full_like", "new_full"):
            if any(_literal(a.value) == _DEFAULT_IGNORE or _is_ignore_name(a.value) for a in node.args):
                self.add("trn301.replaced", node)
        for arg in node.args:
            if arg.keyword is None:
                continue
            key = arg.keyword.value
            if key == "padding_idx":  # nn.Embedding(..., padding_idx=PAD): sequences are padded
                self.add("trn301.pad", (_code(arg.value), node, False))
            elif key == "padding_value":
                self.add("trn301.pad", (_code(arg.value), node, _mentions_target(self._assign_target(), node)))
            elif key == "label_pad_token_id" and _literal(arg.value) == _DEFAULT_IGNORE:
                self.add("trn301.replaced", node)
            elif key == "padding" and (
                    (isinstance(arg.value, cst.Name) and arg.value.value in _TOKEN_PADDING)
                    or (isinstance(arg.value, cst.SimpleString) and arg.value.value.strip("'\"") in _TOKEN_PADDING)
                    or (isinstance(arg.value, cst.Attribute) and arg.value.attr.value in ("MAX_LENGTH", "LONGEST"))):
                tokenizer = node.func.value if isinstance(node.func, cst.Attribute) and \
                    node.func.attr.value in ("encode_plus", "batch_encode_plus", "pad", "__call__",
                                             "encode", "apply_chat_template") else node.func
                name = dotted_name(tokenizer)
                value = f"{name}.pad_token_id" if name is not None else "pad_token_id"
                self.add("trn301.pad", (value, node, False))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if _PAD_NAME.match(node.attr.value):
            name = dotted_name(node)
            if name is not None:
                self.add("trn301.pad", (name, node, False))

    def visit_Name(self, node: cst.Name) -> None:
        parent = self.walk.parent
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return
        if isinstance(parent, cst.Arg) and parent.keyword is node:
            return
        if isinstance(parent, (cst.Param, cst.FunctionDef, cst.ImportAlias)):
            return
        if _PAD_NAME.match(node.value):
            self.add("trn301.pad", (node.value, node, False))

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if node.value.strip("'\"bru") in _PAD_STRINGS:
            self.add("trn301.pad_string", node)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if _literal(node) != _DEFAULT_IGNORE:
            return
        parent = self.walk.parent
        if isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == "ignore_index":
            return
        # `IGNORE_INDEX = -100` defines a constant that labels are filled with
        # elsewhere; `labels[...] = -100`, `[-100] * n`, `padding_value=-100` map
        # padding to the default ignore_index.
        self.add("trn301.replaced", node)

    def visit_Assign(self, node: cst.Assign) -> None:
        record_module_binding(self, node, "trn301.global")
        value = node.value
        for target in node.targets:
            tgt = target.target
            if isinstance(tgt, cst.Subscript):
                base = dotted_name(tgt.value) or ""
                if _is_ignore_name(value):
                    self.add("trn301.replaced", node)
                elif _literal(value) == "0" and "weight" in base.lower():
                    self.add("trn301.weight_zero", node)
                continue
            name = dotted_name(tgt)
            if name is None:
                continue
            if _PAD_NAME.match(name.rsplit(".", 1)[-1]):
                self.add("trn301.pad_def", (name, value))
            klass = self.walk.klass.name.value if self.walk.klass is not None and name.startswith("self.") else ""
            if isinstance(value, cst.Call) and (self.facts.qualify(value.func) or "") in _CLASSES:
                self.add("trn301.ctor", (klass, name, value))
            elif isinstance(value, cst.Dict):
                for element in value.elements:
                    if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString) \
                            and isinstance(element.value, cst.Call) \
                            and (self.facts.qualify(element.value.func) or "") in _CLASSES:
                        key = element.key.value.strip("'\"")
                        self.add("trn301.ctor", (klass, f"{name}[{key}]", element.value))


def _is_ignore_name(node: cst.BaseExpression) -> bool:
    name = dotted_name(node)
    return name is not None and bool(re.search(r"ignore_(index|idx|id|token)|IGNORE", name))


class _LossSite:
    """A loss call waiting for the end of its function (is the loss masked later?)."""

    __slots__ = ("call", "ctor", "report_node", "kwargs_owner", "reduction_none", "in_class")

    def __init__(self, call: cst.Call, ctor: cst.Call | None, reduction_none: bool, in_class: str) -> None:
        self.call = call
        self.ctor = ctor
        self.report_node = ctor if ctor is not None else call
        self.kwargs_owner = ctor if ctor is not None else call
        self.reduction_none = reduction_none
        self.in_class = in_class


class PaddingInLoss(Bindings, Rule):
    CODE = "TRN301"
    Collector = _PaddingFacts
    GLOBALS_KIND = "trn301.global"

    def tracks_bindings(self) -> bool:
        """Without padding anywhere in the file there is nothing to check."""
        active = self.__dict__.get("_active")
        if active is None:
            active = self.facts.has("trn301.pad") or self.facts.has("trn301.pad_string")
            self.__dict__["_active"] = active
        return active

    def _pending(self) -> list[tuple[list[_LossSite], list[bool]]]:
        pending = self.__dict__.get("_pending_sites")
        if pending is None:
            pending = [([], [False])]
            self.__dict__["_pending_sites"] = pending
        return pending

    # -- scopes: a function's loss sites are judged when it ends -----------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self._pending().append(([], [False]))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        pending = self._pending()
        if len(pending) > 1:
            sites, masked = pending.pop()
            self._judge(sites, masked[0])
        super().leave_FunctionDef(original_node)

    def leave_Module(self, original_node: cst.Module) -> None:
        for sites, masked in self._pending():
            self._judge(sites, masked[0])
        self.__dict__["_pending_sites"] = None

    def _note_mask(self) -> None:
        self._pending()[-1][1][0] = True

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not self.tracks_bindings():
            return
        if isinstance(node.operator, cst.Multiply) and (self._masky(node.left) or self._masky(node.right)):
            self._note_mask()

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not self.tracks_bindings():
            return
        for element in node.slice:
            if isinstance(element.slice, cst.Index) and self._masky(element.slice.value):
                self._note_mask()

    def _masky(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Comparison):
            return True
        name = dotted_name(expr)
        if name is None and isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            if expr.func.attr.value in ("ne", "eq", "gt", "ge", "bool"):
                return True
            name = dotted_name(expr.func.value)  # mask.float(), mask.view(-1)
        return name is not None and bool(_MASK_WORDS.search(name.rsplit(".", 1)[-1]))

    # -- loss calls -----------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        if not self.tracks_bindings():
            return
        callee = self.facts.qualify(node.func) or ""
        if callee.rsplit(".", 1)[-1] in ("masked_select", "masked_fill", "masked_fill_", "where", "masked_mean"):
            self._note_mask()
        ctor: cst.Call | None = None
        if callee in _FUNCTIONAL:
            pass
        elif isinstance(node.func, cst.Call) and (self.facts.qualify(node.func.func) or "") in _CLASSES:
            ctor = node.func
        else:
            found = self._loss_object(node.func)
            if found is None:
                return
            ctor = found if isinstance(found, cst.Call) else None
        owner = ctor if ctor is not None else node
        reduction = _kwarg(owner, "reduction")
        reduction_none = reduction is not None and isinstance(reduction.value, cst.SimpleString) \
            and reduction.value.value.strip("'\"") == "none"
        klass = self.walk.klass.name.value if self.walk.klass is not None else ""
        self._pending()[-1][0].append(_LossSite(node, ctor, reduction_none, klass))

    def _loss_object(self, func: cst.BaseExpression) -> cst.Call | str | None:
        """The constructor call of a loss object (`criterion`, `self.loss_fn`,
        `self.losses["ce"]`), or "functional" for an alias of F.cross_entropy."""
        key = dotted_name(func)
        if key is None and isinstance(func, cst.Subscript) and len(func.slice) == 1:
            index = func.slice[0].slice
            base = dotted_name(func.value)
            if base is not None and isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
                key = f"{base}[{index.value.value.strip(chr(39) + chr(34))}]"
        if key is None:
            return None
        bound = self.lookup(key) if "[" not in key else None
        if isinstance(bound, cst.Call):
            return bound if (self.facts.qualify(bound.func) or "") in _CLASSES else None
        if isinstance(bound, (cst.Name, cst.Attribute)):
            return "functional" if (self.facts.qualify(bound) or "") in _FUNCTIONAL else None
        if bound is not None and bound != PARAMETER:
            return None
        # A parameter named like the loss object the script builds and passes in
        # (`def train(model, iterator, optimizer, criterion)`) is that object.
        klass = self.walk.klass.name.value if self.walk.klass is not None and bound is None else ""
        matches = [ctor for owner, target, ctor in self.facts.get("trn301.ctor")  # type: ignore[misc]
                   if target == key and owner in ("", klass)]
        if not matches and key.startswith("self.") and bound is None:
            matches = [ctor for owner, target, ctor in self.facts.get("trn301.ctor")  # type: ignore[misc]
                       if target == key]
        return matches[-1] if matches else None

    # -- judging ----------------------------------------------------------------------------

    def _judge(self, sites: list[_LossSite], function_masks: bool) -> None:
        if not sites:
            return
        pads = self.facts.get("trn301.pad")
        if not pads and not self.facts.has("trn301.pad_string"):
            return
        targets_padded = any(entry[2] for entry in pads)  # type: ignore[index]
        for site in sites:
            self._judge_site(site, function_masks, pads, targets_padded)

    def _judge_site(self, site: _LossSite, function_masks: bool, pads: list[Hashable], targets_padded: bool) -> None:
        call = site.call
        logits = _kwarg(call, "input", 0)
        target = _kwarg(call, "target", 1)
        if logits is None or target is None:
            return
        if not targets_padded and not self._token_level(logits.value, target.value):
            return
        if self._selected_by_mask(logits.value) or self._selected_by_mask(target.value):
            return
        if site.reduction_none and function_masks:
            return
        owner = site.kwargs_owner
        if _kwarg(owner, "weight", 0 if site.ctor is not None else 2) is not None \
                and self.facts.has("trn301.weight_zero"):
            return
        candidates = self._pad_values(pads)
        if not candidates:
            return  # padding only ever with -100
        ignore = _kwarg(owner, "ignore_index", None)
        replaced = self.facts.has("trn301.replaced")
        if ignore is None:
            if replaced:
                return
            self._report(site, candidates, None, pads)
            return
        value = ignore.value
        text = _code(value)
        if any(text == c for c in candidates):
            return
        resolved = self._resolve_literal(value)
        if resolved == _DEFAULT_IGNORE and replaced:
            return
        literal_candidates = {self._resolve_literal_text(c) for c in candidates}
        if resolved is not None and resolved in literal_candidates:
            return
        if resolved is None:
            return  # an ignore_index we cannot evaluate: trust it
        if resolved != _DEFAULT_IGNORE and None in literal_candidates:
            return  # e.g. ignore_index=0 and pad_token_id: may well be equal
        self._report(site, candidates, ignore, pads)

    def _pad_values(self, pads: list[Hashable]) -> list[str]:
        """Distinct pad value texts, most specific first (targets padded, then
        definitions, then mentions); -100 means 'already ignored'."""
        ordered: list[str] = []
        for entry in sorted(pads, key=lambda e: not e[2]):  # type: ignore[index]
            text = entry[0]  # type: ignore[index]
            if self._resolve_literal_text(text) == _DEFAULT_IGNORE or _is_ignore_text(text):
                continue
            if text not in ordered:
                ordered.append(text)
        # SRC_PAD_IDX and TRG_PAD_IDX: the targets' pad is the one that matters
        if any(_TARGET_WORDS.search(t) for t in ordered):
            ordered = [t for t in ordered if not _SOURCE_WORDS.search(t)]
        return ordered

    def _resolve_literal_text(self, text: str) -> str | None:
        return self._resolve_literal(_parse_expression(text)) if _parse_expression(text) is not None else None

    def _resolve_literal(self, node: cst.BaseExpression, depth: int = 3) -> str | None:
        literal = _literal(node)
        if literal is not None or depth == 0:
            return literal
        name = dotted_name(node)
        if name is None:
            return None
        bound = self.lookup(name)
        if isinstance(bound, cst.BaseExpression):
            return self._resolve_literal(bound, depth - 1)
        for defined, value in self.facts.get("trn301.pad_def"):  # type: ignore[misc]
            if defined == name:
                return self._resolve_literal(value, depth - 1)
        return None

    def _token_level(self, logits: cst.BaseExpression, target: cst.BaseExpression) -> bool:
        return self._shape_evidence(logits, is_logits=True) or self._shape_evidence(target, is_logits=False)

    def _shape_evidence(self, expr: cst.BaseExpression, *, is_logits: bool, depth: int = 3) -> bool:
        for node in self._expansions(expr, depth):
            if isinstance(node, cst.Name) and "shift" in node.value:
                return True
            if not isinstance(node, cst.Call):
                continue
            callee = self.facts.qualify(node.func) or ""
            if callee.endswith("pad_sequence"):
                return True
            if not isinstance(node.func, cst.Attribute):
                continue
            method = node.func.attr.value
            args = [a.value for a in node.args if a.keyword is None]
            if method in ("view", "reshape") and args and _literal(args[0]) == "-1":
                # `logits.view(-1, vocab_size)`; `view(-1, self.num_labels)` is also
                # how HF writes *sequence* classification, so class counts do not count
                if is_logits and len(args) == 2 and not _CLASS_COUNT.search(_code(args[1])):
                    return True
            if method == "flatten" and is_logits and args:
                return True
            if is_logits and method in ("transpose", "permute", "swapaxes"):
                return True
        return False

    def _expansions(self, expr: cst.BaseExpression, depth: int) -> Iterable[cst.CSTNode]:
        """Nodes of `expr` and of what its names were bound to (bounded)."""
        stack: list[tuple[cst.CSTNode, int]] = [(expr, depth)]
        seen = 0
        while stack and seen < 200:
            node, left = stack.pop()
            seen += 1
            yield node
            if isinstance(node, (cst.Name, cst.Attribute)) and left > 0:
                name = dotted_name(node)
                bound = self.lookup(name) if name else None
                if isinstance(bound, cst.BaseExpression):
                    stack.append((bound, left - 1))
                if isinstance(node, cst.Name):
                    continue
            stack.extend((child, left) for child in node.children)

    def _selected_by_mask(self, expr: cst.BaseExpression, depth: int = 3) -> bool:
        for node in self._expansions(expr, depth):
            if isinstance(node, cst.Subscript):
                for element in node.slice:
                    if isinstance(element.slice, cst.Index) and self._masky(element.slice.value):
                        return True
            elif isinstance(node, cst.Call):
                last = (self.facts.qualify(node.func) or "").rsplit(".", 1)[-1]
                if last in ("masked_select", "where", "masked_fill", "masked_fill_"):
                    return True
        return False

    # -- reporting -----------------------------------------------------------------------------

    def _report(self, site: _LossSite, candidates: list[str], ignore: cst.Arg | None, pads: list[Hashable]) -> None:
        candidates = [c for c in candidates if _parses(c)]
        if not candidates:
            return
        pad = candidates[0]
        literals = {self._resolve_literal_text(c) for c in candidates}
        unambiguous = len(candidates) == 1 or (len(literals) == 1 and None not in literals)
        if len(candidates) > 1 and unambiguous:
            # several spellings of one value: prefer a name the fix can use (it
            # says what the value means), else the literal
            named = [c for c in candidates if _literal(cst.parse_expression(c)) is None and self._visible(c, site)]
            pad = named[0] if named else next(iter(literals))  # type: ignore[assignment]
        safe = unambiguous and self._visible(pad, site)
        if unambiguous and not safe and len(literals) == 1 and None not in literals:
            pad, safe = next(iter(literals)), True  # type: ignore[assignment]  # the value itself is visible
        loss_name = _code(site.ctor.func) + "()" if site.ctor is not None else _code(site.call.func)
        if ignore is None:
            message = (f"`{loss_name}` over padded targets without `ignore_index`: padding positions (value "
                       f"`{pad}`) are scored as real tokens, so the loss is diluted and the model learns to "
                       f"predict padding")
            owner = site.kwargs_owner
            new_arg = cst.Arg(keyword=cst.Name("ignore_index"), value=cst.parse_expression(pad),
                              equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
            args = list(owner.args)
            if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
                args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            elif args and isinstance(args[-1].comma, cst.Comma) and not _code(args[-1].comma).endswith(" ") \
                    and "\n" not in _code(args[-1].comma):
                args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            changes = (Replace(owner, owner.with_changes(args=[*args, new_arg])),)
        else:
            message = (f"`{loss_name}` ignores `{_code(ignore.value)}` but targets are padded with `{pad}`: "
                       f"padding positions are scored as real tokens, so the loss is diluted and the model learns "
                       f"to predict padding")
            changes = (Replace(ignore.value, pad),)
        related = []
        for entry in sorted(pads, key=lambda e: not e[2])[:2]:  # type: ignore[index]
            text, node, padded = entry  # type: ignore[misc]
            if text in candidates:
                related.append(Related(node, "targets padded here" if padded else f"padding with `{text}`"))
        self.report(site.report_node, message,
                    fix=FixSpec(f"Pass ignore_index={pad}", changes, safe=safe), related=related)

    def _visible(self, pad: str, site: _LossSite) -> bool:
        """Can `pad` be written where the fix goes? Literals can; module-level
        names can; a local name only when the fix goes into the call it
        reaches; attributes of `self` not (they may be set after the loss)."""
        if _literal(cst.parse_expression(pad)) is not None:
            return True
        root = pad.split(".")[0]
        if root == "self":
            return False
        if self.facts.imported(root) is not None:
            return True
        if root in self._module_level():
            return self._defined_before(root, site.ctor)
        return site.ctor is None and self.lookup(root) is not None

    def _defined_before(self, name: str, ctor: cst.Call | None) -> bool:
        """A module-level constructor runs at import: the name must be bound
        above it (module-level records are in file order)."""
        if ctor is None:
            return True
        order = self.facts.get("trn301.global")
        ctor_at = next((i for i, (_, value) in enumerate(order) if value is ctor), None)  # type: ignore[misc]
        if ctor_at is None:
            return True  # built inside a function or class: runs later
        return any(bound == name for bound, _ in order[:ctor_at])  # type: ignore[misc]

    VALID = [
        # the criterion passed in is the one built with the pad index
        "import torch.nn as nn\nTRG_PAD_IDX = TRG.vocab.stoi[TRG.pad_token]\n"
        "criterion = nn.CrossEntropyLoss(ignore_index=TRG_PAD_IDX)\n"
        "def train(model, iterator, criterion):\n    for batch in iterator:\n"
        "        out = model(batch.src, batch.trg)[1:].view(-1, model.output_dim)\n"
        "        loss = criterion(out, batch.trg[1:].view(-1))\n",
        # HF sequence classification: view(-1, num_labels) over class ids
        "import torch.nn as nn\ndef compute_loss(self, model, inputs, tokenizer):\n"
        "    enc = tokenizer(inputs['text'], padding='max_length')\n    labels = inputs.pop('labels')\n"
        "    logits = model(**enc).logits\n"
        "    return nn.CrossEntropyLoss()(logits.view(-1, self.model.config.num_labels), labels.view(-1))\n",
        # ignore_index matches the pad value
        "import torch.nn as nn\nfrom torch.nn.utils.rnn import pad_sequence\nPAD_IDX = 0\n"
        "criterion = nn.CrossEntropyLoss(ignore_index=PAD_IDX)\n"
        "def collate(b):\n    return pad_sequence([x for x, _ in b]), pad_sequence([y for _, y in b])\n"
        "def step(out, trg):\n    return criterion(out.view(-1, out.size(-1)), trg.view(-1))\n",
        "import torch.nn.functional as F\ndef step(model, batch, tokenizer):\n"
        "    logits = model(batch['input_ids'])\n"
        "    return F.cross_entropy(logits.view(-1, logits.size(-1)), batch['labels'].view(-1),"
        " ignore_index=tokenizer.pad_token_id)\n",
        # labels where padding became -100
        "import torch\nimport torch.nn.functional as F\ndef step(model, tokenizer, texts):\n"
        "    enc = tokenizer(texts, padding=True, return_tensors='pt')\n"
        "    labels = enc['input_ids'].clone()\n    labels[labels == tokenizer.pad_token_id] = -100\n"
        "    logits = model(**enc).logits\n"
        "    return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))\n",
        "import torch\nimport torch.nn.functional as F\ndef step(logits, labels, attention_mask):\n"
        "    labels = labels.masked_fill(attention_mask == 0, -100)\n"
        "    return F.cross_entropy(logits.transpose(1, 2), labels)\n",
        # masked losses
        "import torch\nimport torch.nn as nn\nfrom torch.nn.utils.rnn import pad_sequence\n"
        "crit = nn.CrossEntropyLoss(reduction='none')\n"
        "def step(logits, y, mask):\n    loss = crit(logits.view(-1, logits.size(-1)), y.view(-1))\n"
        "    return (loss * mask.view(-1)).sum() / mask.sum()\n",
        "import torch\nimport torch.nn.functional as F\ndef step(logits, labels, attention_mask, pad_token_id):\n"
        "    active = attention_mask.view(-1) == 1\n"
        "    return F.cross_entropy(logits.view(-1, logits.size(-1))[active], labels.view(-1)[active])\n",
        # class weights with zero at pad
        "import torch\nimport torch.nn as nn\nPAD = 0\nweight = torch.ones(V)\nweight[PAD] = 0\n"
        "crit = nn.NLLLoss(weight=weight)\ndef f(out, trg):\n    return crit(out.view(-1, V), trg.view(-1))\n",
        # plain classification with a padded text input
        "import torch.nn as nn\nclass Clf:\n    def __init__(self, tokenizer):\n        self.tok = tokenizer\n"
        "        self.loss = nn.CrossEntropyLoss()\n    def step(self, texts, labels):\n"
        "        enc = self.tok(texts, padding=True, truncation=True, return_tensors='pt')\n"
        "        return self.loss(self.model(**enc).logits, labels)\n",
        # segmentation: ignore_index=255 and no token padding
        "import torch.nn as nn\nimport torch.nn.functional as F\ncrit = nn.CrossEntropyLoss(ignore_index=255)\n"
        "def f(net, img, mask):\n    x = F.pad(img, (0, 1, 0, 1))\n    return crit(net(x), mask)\n",
        # fixed-length LM chunks: flattening, but no padding anywhere
        "import torch.nn.functional as F\ndef f(logits, targets):\n"
        "    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)\n",
        # HF collator maps label padding to -100
        "import torch.nn.functional as F\nfrom transformers import DataCollatorForSeq2Seq\n"
        "collator = DataCollatorForSeq2Seq(tokenizer, model=model, padding=True)\n"
        "def f(logits, labels):\n    return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))\n",
    ]
    INVALID = [
        # bentrevett-style: the criterion is built at top level and passed in
        Invalid("import torch.nn as nn\nSRC_PAD_IDX, TRG_PAD_IDX = 1, 1\ncriterion = nn.CrossEntropyLoss()\n"
                "def train(model, iterator, optimizer, criterion):\n    for batch in iterator:\n"
                "        output = model(batch.src, batch.trg)[1:].view(-1, model.output_dim)\n"
                "        loss = criterion(output, batch.trg[1:].view(-1))\n", line=3,
                fixed="import torch.nn as nn\nSRC_PAD_IDX, TRG_PAD_IDX = 1, 1\n"
                "criterion = nn.CrossEntropyLoss(ignore_index=TRG_PAD_IDX)\n"
                "def train(model, iterator, optimizer, criterion):\n    for batch in iterator:\n"
                "        output = model(batch.src, batch.trg)[1:].view(-1, model.output_dim)\n"
                "        loss = criterion(output, batch.trg[1:].view(-1))\n"),
        Invalid("import torch\nfrom torch.nn import functional as nnf\nfrom torch.nn.utils.rnn import pad_sequence\n"
                "def collate(batch):\n    targets = pad_sequence(batch, batch_first=True, padding_value=-1)\n"
                "    return targets\n"
                "def step(logp, targets):\n    return nnf.nll_loss(logp.transpose(1, 2), targets, ignore_index=0)\n",
                line=8,
                fixed="import torch\nfrom torch.nn import functional as nnf\nfrom torch.nn.utils.rnn import pad_sequence\n"
                "def collate(batch):\n    targets = pad_sequence(batch, batch_first=True, padding_value=-1)\n"
                "    return targets\n"
                "def step(logp, targets):\n    return nnf.nll_loss(logp.transpose(1, 2), targets, ignore_index=-1)\n"),
        Invalid("import torch\nimport torch.nn as nn\nfrom torch.nn.utils.rnn import pad_sequence\n"
                "def collate(batch):\n    labels = pad_sequence([b[1] for b in batch], batch_first=True)\n"
                "    return labels\n"
                "criterion = nn.CrossEntropyLoss()\n"
                "def step(logits, labels):\n    return criterion(logits.transpose(1, 2), labels)\n", line=7,
                fixed="import torch\nimport torch.nn as nn\nfrom torch.nn.utils.rnn import pad_sequence\n"
                "def collate(batch):\n    labels = pad_sequence([b[1] for b in batch], batch_first=True)\n"
                "    return labels\n"
                "criterion = nn.CrossEntropyLoss(ignore_index=0)\n"
                "def step(logits, labels):\n    return criterion(logits.transpose(1, 2), labels)\n"),
        Invalid("import torch.nn.functional as F\nPAD_IDX = 1\n"
                "def step(model, src, trg):\n    out = model(src)\n"
                "    return F.cross_entropy(out.reshape(-1, out.size(-1)), trg.reshape(-1))\n", line=5,
                fixed="import torch.nn.functional as F\nPAD_IDX = 1\n"
                "def step(model, src, trg):\n    out = model(src)\n"
                "    return F.cross_entropy(out.reshape(-1, out.size(-1)), trg.reshape(-1), ignore_index=PAD_IDX)\n"),
        Invalid("import torch\nfrom torch.nn import CrossEntropyLoss as CE\nclass Seq2Seq(torch.nn.Module):\n"
                "    def __init__(self, vocab):\n        super().__init__()\n"
                "        self.emb = torch.nn.Embedding(len(vocab), 256, padding_idx=vocab['<pad>'])\n"
                "        self.criterion = CE()\n"
                "    def loss(self, logits, tgt):\n"
                "        return self.criterion(logits.view(-1, logits.size(-1)), tgt.view(-1))\n", line=7),
        Invalid("import torch\nimport torch.nn.functional as F\ndef step(model, tokenizer, texts):\n"
                "    enc = tokenizer(texts, padding='max_length', max_length=128, return_tensors='pt')\n"
                "    labels = enc['input_ids'][:, 1:]\n    logits = model(enc['input_ids']).logits[:, :-1]\n"
                "    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1),"
                " ignore_index=-100)\n", line=7,
                fixed="import torch\nimport torch.nn.functional as F\ndef step(model, tokenizer, texts):\n"
                "    enc = tokenizer(texts, padding='max_length', max_length=128, return_tensors='pt')\n"
                "    labels = enc['input_ids'][:, 1:]\n    logits = model(enc['input_ids']).logits[:, :-1]\n"
                "    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1),"
                " ignore_index=tokenizer.pad_token_id)\n"),
        Invalid("import torch\nimport torch.nn as nn\nfrom torch.nn.utils.rnn import pad_sequence\n"
                "losses = {'tok': nn.NLLLoss()}\n"
                "def collate(batch):\n    tgt = pad_sequence([t for _, t in batch], padding_value=3)\n"
                "    return tgt\n"
                "def step(logp, tgt):\n    return losses['tok'](logp.flatten(0, 1), tgt.flatten())\n", line=4,
                fixed="import torch\nimport torch.nn as nn\nfrom torch.nn.utils.rnn import pad_sequence\n"
                "losses = {'tok': nn.NLLLoss(ignore_index=3)}\n"
                "def collate(batch):\n    tgt = pad_sequence([t for _, t in batch], padding_value=3)\n"
                "    return tgt\n"
                "def step(logp, tgt):\n    return losses['tok'](logp.flatten(0, 1), tgt.flatten())\n"),
        Invalid("import torch\nimport torch.nn as nn\nfrom torch.nn.utils.rnn import pad_sequence\n"
                "def train(model, loader):\n    crit = nn.CrossEntropyLoss(ignore_index=-1)\n"
                "    for src, trg in loader:\n        trg = pad_sequence(trg, batch_first=True)\n"
                "        out = model(src)\n        loss = crit(out.view(-1, out.shape[-1]), trg.view(-1))\n",
                line=5,
                fixed="import torch\nimport torch.nn as nn\nfrom torch.nn.utils.rnn import pad_sequence\n"
                "def train(model, loader):\n    crit = nn.CrossEntropyLoss(ignore_index=0)\n"
                "    for src, trg in loader:\n        trg = pad_sequence(trg, batch_first=True)\n"
                "        out = model(src)\n        loss = crit(out.view(-1, out.shape[-1]), trg.view(-1))\n"),
    ]


def _parses(text: str) -> bool:
    try:
        cst.parse_expression(text)
    except (cst.ParserSyntaxError, RecursionError):
        return False
    return True


def _is_ignore_text(text: str) -> bool:
    return bool(re.search(r"ignore_(index|idx|id|token)|IGNORE", text))
