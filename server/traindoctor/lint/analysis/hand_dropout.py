"""Dropout written by hand: a function that draws a random keep mask and rescales what it keeps by
the reciprocal of the keep probability, the two tied by one probability it is given (a parameter or
an attribute of `self`).

    def sparse_dropout(x, rate, noise_shape):             # RecBole's NGCF
        keep = 1 - rate
        keep += torch.rand(noise_shape)
        mask = torch.floor(keep).type(torch.bool)
        ...
        return out * (1. / (1 - rate))

`nn.Dropout` switches itself off in eval mode; such a function does not unless it reads the
module's `training` flag. Recognised from what the code does, not from its name: a uniform or
Bernoulli draw (vocab `dropout_mask_draws`), a mask made from it (`floor`, a comparison,
`bernoulli`), a probability the draw is compared with, added to or drawn from, and a division by
(or a product with the reciprocal of) an expression of that probability and numbers only
(`1 - rate`, `self.kprob`, `keep` bound to `1 - p`), the mask applied here. Gaussian noise, a draw
whose probability never divides (augmentations that flip or rotate with probability p), or a mask
handed to other code that applies it (a shared-dropout module that reads `self.training`) is not
dropout written here.

Layer 1 of the analysis: it imports only names.py, vocab.py and the walker."""

from __future__ import annotations

from typing import Callable

import libcst as cst

from ..walk import iter_nodes
from .names import dotted_name
from .vocab import vocab

_COMPARISONS = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)


def _probabilities(function: cst.FunctionDef) -> set[str]:
    """Names a probability may be given by: the parameters and the `self.x` attributes read."""
    params = function.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    self_name = next(iter(p.name.value for p in (*params.posonly_params, *params.params)), None)
    names.discard(self_name or "")
    for node in iter_nodes(function.body):
        if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == self_name:
            names.add(f"{self_name}.{node.attr.value}")
    return names


def _pure(node: cst.CSTNode, names: set[str], locals_of: dict[str, set[str]]) -> set[str] | None:
    """The probabilities an expression made of them and numbers only reads (`1 - self.p`, `keep`
    bound to `1 - rate`); None for anything else (a call, a shape, the data)."""
    kind = type(node)
    if kind in (cst.Integer, cst.Float):
        return set()
    if kind in (cst.Name, cst.Attribute):
        name = dotted_name(node)
        if name in names:
            return {name}
        return set(locals_of[name]) if name in locals_of else None
    if kind is cst.UnaryOperation:
        return _pure(node.expression, names, locals_of)
    if kind is cst.BinaryOperation and type(node.operator) in (cst.Add, cst.Subtract, cst.Multiply, cst.Divide):
        left, right = _pure(node.left, names, locals_of), _pure(node.right, names, locals_of)
        return None if left is None or right is None else left | right
    return None


def _holds(node: cst.CSTNode, draws: list[cst.Call]) -> bool:
    return any(inner is d for inner in iter_nodes(node) for d in draws)


def reads_training(function: cst.FunctionDef) -> bool:
    """The function reads a `training` flag (`self.training`, a `training` parameter)."""
    return any((type(n) is cst.Name and n.value == "training") or
               (type(n) is cst.Attribute and n.attr.value == "training") for n in iter_nodes(function))


def _draw(qualified: str, method: str, draws_vocab) -> bool:
    return qualified in draws_vocab or method in ("bernoulli_", "uniform_")


def is_mask_draw(call: cst.Call, qualify: Callable[[cst.BaseExpression], str | None]) -> bool:
    """`call` is a draw a keep mask is made from (vocab `dropout_mask_draws`, `bernoulli_`, `uniform_`)."""
    method = call.func.attr.value if type(call.func) is cst.Attribute else ""
    return _draw(qualify(call.func) or "", method, vocab().dropout_mask_draws)


def dropout_draw(function: cst.FunctionDef, qualify: Callable[[cst.BaseExpression], str | None]) -> cst.Call | None:
    """The random draw of `function` when its body is dropout written by hand (see the module), else None."""
    draws_vocab = vocab().dropout_mask_draws
    draws: list[cst.Call] = []
    masked = False
    for node in iter_nodes(function.body):
        kind = type(node)
        if kind is cst.Call:
            name = qualify(node.func) or ""
            method = node.func.attr.value if type(node.func) is cst.Attribute else ""
            if _draw(name, method, draws_vocab):
                draws.append(node)
                masked = masked or "bernoulli" in name or method == "bernoulli_"
            elif name.endswith("floor") or method in ("floor", "floor_"):
                masked = True
        elif kind is cst.Comparison and any(type(t.operator) in _COMPARISONS for t in node.comparisons):
            masked = True
    if not draws or not masked or _handed_over(function, draws, qualify):
        return None
    names = _probabilities(function)
    locals_of: dict[str, set[str]] = {}  # local name -> the probabilities it is bound to (`keep = 1 - p`)
    for node in iter_nodes(function.body):
        if type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
            read = _pure(node.value, names, locals_of)
            if read:
                locals_of[node.targets[0].target.value] = read
    drawn: set[str] = set()  # probabilities a draw is compared with, added to, or drawn from
    for node in iter_nodes(function.body):
        kind = type(node)
        if kind is cst.BinaryOperation or kind is cst.Comparison:
            sides = [node.left, node.right] if kind is cst.BinaryOperation else \
                [node.left, *(c.comparator for c in node.comparisons)]
            if any(_holds(side, draws) for side in sides):
                for side in sides:
                    read = None if _holds(side, draws) else _pure(side, names, locals_of)
                    drawn |= read or set()
        elif kind is cst.AugAssign and _holds(node.value, draws):  # `keep += torch.rand(shape)`
            drawn |= _pure(node.target, names, locals_of) or set()
        elif kind is cst.Call and any(node is d for d in draws) and "bernoulli" in _called_name(node):
            for inner in iter_nodes(node):
                if type(inner) is cst.Arg:
                    drawn |= _pure(inner.value, names, locals_of) or set()
    if not drawn:
        return None
    for node in iter_nodes(function.body):
        denominator = None
        if type(node) is cst.Call and _called_name(node) in ("div", "div_", "true_divide") and node.args:
            denominator = node.args[-1].value  # `x.div(keep)`, `torch.div(x, keep)`
        elif type(node) is cst.BinaryOperation and type(node.operator) is cst.Divide:
            denominator = node.right  # `x * mask / keep`, `out * (1. / (1 - rate))`
        if denominator is not None and not _holds(denominator, draws) and \
                (_pure(denominator, names, locals_of) or set()) & drawn:
            return draws[0]
    return None


def _handed_over(function: cst.FunctionDef, draws: list[cst.Call],
                 qualify: Callable[[cst.BaseExpression], str | None]) -> bool:
    """The drawn mask, or a name bound from it, is an argument of a call other than torch's own
    (`self.convs[i](h, graph, mask)`): that code applies it, and may do so in training only (a
    shared-dropout module that reads `self.training`)."""
    derived: set[str] = set()
    for node in iter_nodes(function.body):  # source order: a name bound from the draw or from such a name
        if type(node) in (cst.Assign, cst.AugAssign):
            value = node.value
            if _holds(value, draws) or any(type(n) is cst.Name and n.value in derived for n in iter_nodes(value)):
                targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
                derived |= {n.value for t in targets for n in iter_nodes(t) if type(n) is cst.Name}
    for node in iter_nodes(function.body):
        if type(node) is cst.Call and not (qualify(node.func) or "").startswith("torch.") and \
                any(type(a.value) is cst.Name and a.value.value in derived for a in node.args):
            return True
    return False


def _called_name(call: cst.Call) -> str:
    """The called name's last part (`bernoulli` of `torch.bernoulli` or `x.bernoulli_`)."""
    func = call.func
    return func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else ""
