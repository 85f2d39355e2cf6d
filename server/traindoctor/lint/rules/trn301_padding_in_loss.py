"""TRN301 padding-in-loss: a token-level cross entropy / NLL over padded targets
with no `ignore_index` (or one that is not the pad value) and no mask.

Evidence is the model's padding facts (pad_sequence/F.pad of targets and their
value, tokenizer padding, `pad_*_id` names, `"[PAD]"`; padding mapped to -100
anywhere) and its loss objects (built at module level, in `__init__`, or in a
dict). The loss must be token-level (flattened or transposed logits, shifted
targets, or padded targets) and unmasked; an object loss is reported at its
constructor, where `ignore_index=` goes."""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import code
from ..analysis.facts import Marker
from ..analysis.names import dotted_name, without_moves
from ..analysis.padding import (IGNORE, derived_from_padding, expansions, int_value, kwarg, literal,
                                parse_expression, pad_values)
from ..analysis.vocab import vocab
from ..fixes import with_kwargs
from ..rule import FixSpec, Related, Replace, Rule


class PaddingInLoss(Rule):
    CODE = "TRN301"
    READS = ("names", "objects", "padding", "constants", "layout")
    MODULE_HOOK_JUDGES_VISITS = True  # leave_Module judges the sites the visits collected

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self._padded, self._first_pads, self._targets_padded, self._target_pad_name = \
            self.model.remembered(self.CODE, self._file_pads)
        self._sites: list[list[tuple]] = [[]]
        self._masked: list[bool] = [False]

    def _file_pads(self) -> tuple:
        """Once per lint: any pads, the two a report points at (target pads first), any pad of
        targets, any pad named like a target's."""
        pads = [p for p in self.model.facts["padding"] if type(p).__name__ == "Pad"]
        return (bool(pads), sorted(pads, key=lambda p: not p.targets)[:2], any(p.targets for p in pads),
                any(vocab().pattern("target_name_pattern").search(p.value) for p in pads))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._sites.append([])
        self._masked.append(False)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._judge(self._sites.pop(), self._masked.pop())

    def leave_Module(self, node: cst.Module) -> None:
        self._judge(self._sites.pop(), self._masked.pop())

    def _masky(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Comparison):
            return True
        name = dotted_name(expr)
        if name is None and isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            if expr.func.attr.value in ("ne", "eq", "gt", "ge", "bool"):
                return True
            name = dotted_name(expr.func.value)
        return name is not None and bool(vocab().pattern("mask_name_pattern").search(name.rsplit(".", 1)[-1]))

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if self._padded and isinstance(node.operator, cst.Multiply) and (self._masky(node.left) or
                                                                        self._masky(node.right)):
            self._masked[-1] = True

    # -- labels handed to a Hugging Face model, whose loss ignores only -100 ------------------

    def visit_DictElement(self, node: cst.DictElement) -> None:
        if self._padded and _string(node.key) in vocab().model_label_keys:
            self._model_labels(node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._padded and any(isinstance(t.target, cst.Subscript) and len(t.target.slice) == 1 and
                                isinstance(t.target.slice[0].slice, cst.Index) and
                                _string(t.target.slice[0].slice.value) in vocab().model_label_keys
                                for t in node.targets):
            self._model_labels(node.value)

    def _model_labels(self, value: cst.BaseExpression) -> None:
        """`value` becomes a transformers model's `labels`: its loss skips only -100, so token ids
        padded by the tokenizer (or pad_sequence) count as targets unless the file maps the padded
        positions to -100 (or a collator that rewrites labels does)."""
        if not self.model.remembered(f"{self.CODE}.hf", self._feeds_transformers) or \
                self.model.has_marker("padding", "ignore-selective") or \
                self.model.has_marker("padding", "ignore-index-arg"):
            return
        if derived_from_padding(self.model, self.scope(), value, self.walk.order, with_token_ids=True):
            self.report(value, "`labels` built from padded token ids: a transformers model's loss skips only "
                               "-100, so the padding positions are scored as real tokens; set them to -100 "
                               "(`labels[attention_mask == 0] = -100`)")

    def _feeds_transformers(self) -> bool:
        roots = vocab().label_convention_libraries
        return any(full.split(".")[0] in roots for local, full in self.names.aliases if not local.startswith("="))

    def visit_Call(self, node: cst.Call) -> None:
        if not self._padded:
            return
        v = vocab()
        callee = self.names.qualify(node.func) or ""
        if callee.rsplit(".", 1)[-1] in ("masked_select", "masked_fill", "masked_fill_", "where", "masked_mean"):
            self._masked[-1] = True
        loss = self.values.loss_call(node)
        if loss is None or loss.loss not in v.token_losses:
            return
        ctor = loss.ctor
        owner = ctor if ctor is not None else node
        reduction = kwarg(owner, "reduction")
        none = reduction is not None and isinstance(reduction.value, cst.SimpleString) and \
            reduction.value.value.strip("'\"") == "none"
        self._sites[-1].append((node, ctor, none))

    # -- judging ------------------------------------------------------------------------

    def _judge(self, sites: list[tuple], function_masks: bool) -> None:
        targets_padded, target_pad_name = self._targets_padded, self._target_pad_name
        for call, ctor, reduction_none in sites:
            logits, target = kwarg(call, "input", 0), kwarg(call, "target", 1)
            if logits is None or target is None:
                continue
            # Only targets provably padded with a known id count: padded themselves (pad_sequence,
            # F.pad of labels), a target pad id (TRG_PAD_IDX), or derived from padded token ids.
            derived = self._from_padding(target.value)
            if not (targets_padded or target_pad_name or derived):
                continue
            if not targets_padded and not (self._shape(logits.value, True) or self._shape(target.value, False)):
                continue
            if self._selected(logits.value) or self._selected(target.value) or (reduction_none and function_masks):
                continue
            owner = ctor if ctor is not None else call
            if self._zeroed_weight(kwarg(owner, "weight", 0 if ctor is not None else 2)):
                continue
            candidates = self._pad_values()
            if not candidates:
                continue
            ignore = kwarg(owner, "ignore_index")
            mapped = self.model.has_marker("padding", "ignore-mapped")
            if ignore is None:
                if not mapped:
                    self._report(call, ctor, owner, candidates, None)
                continue
            resolved = self._literal(ignore.value)
            literals = {self._literal_text(c) for c in candidates}
            if code(ignore.value) in candidates or resolved is None or resolved in literals or \
                    (resolved == IGNORE and mapped) or (resolved != IGNORE and None in literals):
                continue
            self._report(call, ctor, owner, candidates, ignore)

    def _zeroed_weight(self, weight: cst.Arg | None) -> bool:
        """The loss's class weights are a tensor this file zeroes at an index (`weight[PAD] = 0`): the
        padding class then weighs nothing (an unreadable index is taken to be the padding's)."""
        if weight is None:
            return False
        name = dotted_name(without_moves(weight.value))  # weight.to(device), weight.cuda()
        return name is not None and any(fact.kind == "index-zeroed" and fact.text == name
                                        for fact in self.model.facts["padding"] if isinstance(fact, Marker))

    def _pad_values(self) -> list[str]:
        return list(pad_values(self.model))

    def _literal_text(self, text: str) -> str | None:
        parsed = parse_expression(text)
        return self._literal(parsed) if parsed is not None else None

    def _literal(self, node: cst.BaseExpression) -> str | None:
        return int_value(self.model, node, (self.scope(), self.analysis.module_scope), self.walk.order)

    def _expansions(self, expr: cst.BaseExpression, depth: int = 3):
        return expansions(self.model, self.scope(), expr, self.walk.order, depth)

    def _from_padding(self, expr: cst.BaseExpression) -> bool:
        return derived_from_padding(self.model, self.scope(), expr, self.walk.order)

    def _shape(self, expr: cst.BaseExpression, is_logits: bool) -> bool:
        for node in self._expansions(expr):
            if isinstance(node, cst.Name) and "shift" in node.value:
                return True
            if not isinstance(node, cst.Call):
                continue
            if (self.names.qualify(node.func) or "").endswith("pad_sequence"):
                return True
            if not isinstance(node.func, cst.Attribute) or not is_logits:
                continue
            method, args = node.func.attr.value, [a.value for a in node.args if a.keyword is None]
            if method in ("view", "reshape") and len(args) == 2 and literal(args[0]) == "-1" and \
                    not any(w in code(args[1]).lower() for w in ("label", "class", "categor")):
                return True
            if method in ("transpose", "permute", "swapaxes") or (method == "flatten" and args):
                return True
        return False

    def _selected(self, expr: cst.BaseExpression) -> bool:
        for node in self._expansions(expr):
            if isinstance(node, cst.Subscript) and any(
                    isinstance(e.slice, cst.Index) and self._masky(e.slice.value) for e in node.slice):
                return True
            if isinstance(node, cst.Call) and (self.names.qualify(node.func) or "").rsplit(".", 1)[-1] in (
                    "masked_select", "where", "masked_fill", "masked_fill_"):
                return True
        return False

    def _report(self, call, ctor, owner, candidates: list[str], ignore) -> None:
        pad = candidates[0]
        literals = {self._literal_text(c) for c in candidates}
        unambiguous = len(candidates) == 1 or (len(literals) == 1 and None not in literals)
        named = [c for c in candidates if literal(parse_expression(c)) is None and self._visible(c, ctor)]
        if len(candidates) > 1 and unambiguous:
            pad = named[0] if named else next(iter(literals))  # type: ignore[assignment]
        safe = unambiguous and self._visible(pad, ctor)
        if unambiguous and not safe and len(literals) == 1 and None not in literals:
            pad, safe = next(iter(literals)), True  # type: ignore[assignment]
        if not self._visible(pad, ctor):
            self.report(ctor if ctor is not None else call, self._message(call, ctor, pad, ignore))
            return  # a fix may only use names bound where it goes
        message = self._message(call, ctor, pad, ignore)
        changes = (Replace(owner, with_kwargs(owner, [("ignore_index", pad)])),) if ignore is None else \
            (Replace(ignore.value, pad),)
        related = [Related(p.node, "targets padded here" if p.targets else f"padding with `{p.value}`")
                   for p in self._first_pads if p.value in candidates]
        self.report(ctor if ctor is not None else call, message,
                    fix=FixSpec(f"Pass ignore_index={pad}", changes, safe=safe), related=related)

    def _message(self, call, ctor, pad: str, ignore) -> str:
        name = code(ctor.func) + "()" if ctor is not None else code(call.func)
        said = "over padded targets without `ignore_index`" if ignore is None else \
            f"ignores `{code(ignore.value)}` but targets are padded with `{pad}`"
        value = f" (value `{pad}`)" if ignore is None else ""
        return (f"`{name}` {said}: padding positions{value} are scored as real tokens, so the loss is diluted "
                f"and the model learns to predict padding")

    def _visible(self, pad: str, ctor: cst.Call | None) -> bool:
        """Can `pad` be written where the fix goes (literals, imports, module names bound before)?"""
        if literal(parse_expression(pad)) is not None:
            return True
        root = pad.split(".")[0]
        if root == "self":
            return False
        if self.names.imported(root) is not None or root in self.model.constants:
            return True
        if ctor is None:
            return self.scope().lookup(root, self.walk.order) is not None or root in self.model.module_names
        return root in self.model.module_names and self.model.bound_before(root, ctor)


def _string(node: cst.BaseExpression) -> str | None:
    return node.evaluated_value if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str) \
        else None
